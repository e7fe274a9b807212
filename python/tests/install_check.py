"""Run by test_install.py with only the pip-installed package on the path and no LD_LIBRARY_PATH:
init_process_group("conflux") must work without importing torch_conflux (torch's entry point loads
it), and the extension must have found libconflux beside itself."""
import datetime
import os
import sys

import torch
import torch.distributed as dist

assert "torch_conflux" in sys.modules, "torch's 'torch.backends' entry point did not load torch_conflux"
dist.init_process_group("conflux", init_method=f"file://{sys.argv[1]}", rank=0, world_size=1,
                        timeout=datetime.timedelta(seconds=30))
t = torch.arange(4, dtype=torch.float32)
dist.all_reduce(t)
assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
maps = open("/proc/self/maps").read()
lib = [line.split()[-1] for line in maps.splitlines() if "libconflux.so" in line][0]
assert os.path.dirname(lib) == os.path.dirname(sys.modules["torch_conflux"].__file__), lib
dist.destroy_process_group()
print("OK autoloaded, libconflux from", lib)
