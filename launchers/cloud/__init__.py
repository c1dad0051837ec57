"""Kubernetes and the clouds: the acceptance job as Kubernetes documents, SkyPilot and dstack
tasks, what those share (cloudjob), the fabrics a pod asks for, and `stoker submit --platform`.

May import: reports.shared, launchers
"""
