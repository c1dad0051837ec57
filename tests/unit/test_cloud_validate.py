"""Every rendered Kubernetes document validated offline against Kubernetes' own OpenAPI
schemas, in strict mode (unknown fields are errors), with the `kubernetes-validate` package
(pinned in pyproject's test extra) for the Kubernetes versions below. The operator kinds
(MPIJob, JobSet) have no shipped schema: their pod templates are validated as core
PodTemplate / Job documents, their own fields against the small schemas here.
SkyPilot's and dstack's parsers: tests/unit/test_cloud_parsers.py."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.test_cloud_render import CASES, docs

kv = pytest.importorskip(
    "kubernetes_validate", reason="pip install -e '.[test]' installs kubernetes-validate"
)
jsonschema = pytest.importorskip("jsonschema")

# The oldest Kubernetes still common on neoclouds' managed offerings, and a recent one.
K8S_VERSIONS = ("1.30.0", "1.34.0")
K8S_CASES = sorted(n for n, (platform, _) in CASES.items() if platform == "k8s")

_OBJ = {"type": "object"}
_META = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
_TEMPLATE = {"type": "object", "required": ["spec"]}
# The fields of kubeflow.org/v2beta1 MPIJob and jobset.x-k8s.io/v1alpha2 JobSet that we
# write, from their CRDs (mpi-operator v0.6, jobset v0.8); nothing else is allowed.
MPIJOB = {
    "type": "object",
    "additionalProperties": False,
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "kubeflow.org/v2beta1"},
        "kind": {"const": "MPIJob"},
        "metadata": _META,
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["mpiReplicaSpecs"],
            "properties": {
                "slotsPerWorker": {"type": "integer", "minimum": 1},
                "mpiImplementation": {"enum": ["OpenMPI", "Intel", "MPICH"]},
                "runPolicy": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "cleanPodPolicy": {"enum": ["None", "Running", "All"]},
                        "backoffLimit": {"type": "integer", "minimum": 0},
                        "activeDeadlineSeconds": {"type": "integer", "minimum": 1},
                        "ttlSecondsAfterFinished": {"type": "integer", "minimum": 0},  # RunPolicy
                    },
                },
                "mpiReplicaSpecs": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["Launcher", "Worker"],
                    "patternProperties": {
                        "^(Launcher|Worker)$": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["template"],
                            "properties": {
                                "replicas": {"type": "integer", "minimum": 1},
                                "restartPolicy": {"enum": ["Always", "OnFailure", "Never", "ExitCode"]},
                                "template": _TEMPLATE,
                            },
                        }
                    },
                },
            },
        },
    },
}
JOBSET = {
    "type": "object",
    "additionalProperties": False,
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "jobset.x-k8s.io/v1alpha2"},
        "kind": {"const": "JobSet"},
        "metadata": _META,
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["replicatedJobs"],
            "properties": {
                "network": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "enableDNSHostnames": {"type": "boolean"},
                        "subdomain": {"type": "string"},
                    },
                },
                "failurePolicy": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"maxRestarts": {"type": "integer", "minimum": 0}},
                },
                "ttlSecondsAfterFinished": {"type": "integer", "minimum": 0},  # JobSetSpec
                "replicatedJobs": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["name", "template"],
                        "properties": {
                            "name": {"type": "string"},
                            "replicas": {"type": "integer", "minimum": 1},
                            "template": _TEMPLATE,
                        },
                    },
                },
            },
        },
    },
}


def core_documents(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The core-API documents in one rendered document: itself, or its pod/job templates."""
    name = {"name": doc["metadata"]["name"]}
    if doc["kind"] == "MPIJob":
        jsonschema.validate(doc, MPIJOB)
        return [
            {
                "apiVersion": "v1",
                "kind": "PodTemplate",
                "metadata": {"name": f"{name['name']}-{role.lower()}"},
                "template": spec["template"],
            }
            for role, spec in doc["spec"]["mpiReplicaSpecs"].items()
        ]
    if doc["kind"] == "JobSet":
        jsonschema.validate(doc, JOBSET)
        out = []
        for rj in doc["spec"]["replicatedJobs"]:
            out.append(
                {"apiVersion": "batch/v1", "kind": "Job", "metadata": name, "spec": rj["template"]["spec"]}
            )
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "PodTemplate",
                    "metadata": name,
                    "template": rj["template"]["spec"]["template"],
                }
            )
        return out
    return [doc]


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("name", K8S_CASES)
def test_kubernetes_documents_validate_strictly(name: str, version: str) -> None:
    checked = []
    for doc in docs(name):
        for core in core_documents(doc):
            kv.validate(core, version, strict=True)
            checked.append(core["kind"])
    assert checked  # something was validated


def test_strict_validation_rejects_an_unknown_field() -> None:
    """The validator is not a no-op: one misspelt field in a pod spec fails it."""
    job = docs("k8s-job-ib.yaml")[1]
    job["spec"]["template"]["spec"]["hostNetwrok"] = True
    with pytest.raises(kv.ValidationError):
        kv.validate(job, K8S_VERSIONS[-1], strict=True)
    mpi = docs("k8s-mpijob-efa.yaml")[0]
    mpi["spec"]["slotsPerWorkers"] = 8
    with pytest.raises(jsonschema.ValidationError):
        core_documents(mpi)
