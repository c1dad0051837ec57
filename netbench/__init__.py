"""netbench: collective sweeps with nccl-tests semantics."""
