"""The backend's devices, checked without a GPU (devices_worker.py); CUDA tensors themselves are
checked on a GPU machine by gpu_torch.py (CTest: Gpu.torch)."""
import os

import launch


def test_registered_for_cpu_and_cuda_and_refuses_other_devices():
    env = {"EXPECT_CUDA_PATH": "1" if os.environ.get("CONFLUX_CUDA_LIB") else "0"}
    launch.assert_ok(launch.run("devices_worker.py", 2, timeout=120, env=env))
