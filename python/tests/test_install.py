"""`pip install --no-build-isolation ./python` as a user runs it (into a target folder): the
installed package registers 'conflux' through torch's entry point with no explicit import, and it
runs with no LD_LIBRARY_PATH (the extension's RPATH is $ORIGIN, libconflux is installed beside it).
CONFLUX_LIB and CONFLUX_BUILD_BASE (set by CTest) reuse the build's libconflux and compiled objects,
so the install only links."""
import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent


def test_pip_install_autoloads_and_needs_no_library_path(tmp_path):
    target = tmp_path / "site"
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
                    "--target", str(target), str(HERE.parent)], env=env, check=True)
    so = next((target / "torch_conflux").glob("_C*.so"))
    assert (target / "torch_conflux" / "libconflux.so.0").exists()
    assert "$ORIGIN" in subprocess.run(["readelf", "-d", str(so)], capture_output=True, text=True).stdout
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTHONPATH")}
    env.update(PYTHONPATH=str(target), TORCH_DEVICE_BACKEND_AUTOLOAD="1")
    out = subprocess.run([sys.executable, str(HERE / "install_check.py"), str(tmp_path / "store")], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "OK autoloaded" in out.stdout
