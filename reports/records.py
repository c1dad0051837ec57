"""The record schema under the name users' scripts import (`from reports.records import
NetRecord, IoRecord`, docs/contract.md): a re-export of reports/shared/records.py, where the
schema lives on the floor every part of stoker shares. Nothing in stoker imports this module."""

from reports.shared.records import *  # noqa: F403
