"""gpu_check's parts: `plan` (the steps, their time shares and command lines: pure), `execute`
(runs them under their shares), `bare` (the reference loops run on the GPU: a mamf-finder-style
matmul, an nvbandwidth-style copy, torch.save and DCP of GPU tensors), `summary` (the one table
the run ends with). benchmarks/gpu_check.py is the command."""
