"""iobench: fio-driven storage tests as a training job stresses storage."""
