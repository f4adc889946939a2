"""The GPU harness: MLIR GPU programs lowered to executables and run on a CUDA driver, real or
fake (see README.md here)."""
