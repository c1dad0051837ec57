"""Reading records' foreign sources: nccl-tests logs and JSON, fio JSON (pure parsers + the import walk)."""
