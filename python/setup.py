"""Builds torch_conflux, the Conflux backend for torch.distributed (see pyproject.toml).

The extension is compiled by torch.utils.cpp_extension, which takes the C++ standard and the
_GLIBCXX_USE_CXX11_ABI flag from the installed torch. It links libconflux through Conflux's public
C API only; the library is copied into the package beside the extension, whose RPATH is $ORIGIN,
so nothing needs LD_LIBRARY_PATH.

CONFLUX_LIB names an already-built libconflux.so (the project's CMake build passes its own);
without it, the core library is built here with CMake (tools/install-deps.sh installs what that needs).
CONFLUX_BUILD_BASE is setuptools' build folder (default python/build); the CMake build passes its
own, and a pip install given the same one finds its objects up to date and only links.
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys

from setuptools import setup

# Building must not load an installed (possibly older) torch_conflux through torch's entry point.
os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent

try:
    from torch.utils.cpp_extension import BuildExtension, CppExtension
except ImportError:
    sys.exit("torch_conflux builds against the installed torch: install torch first "
             "(pip install torch==2.13.0), then pip install --no-build-isolation ./python")


def version():
    text = (REPO / "CMakeLists.txt").read_text()
    return re.search(r"project\(Conflux VERSION ([0-9.]+)", text).group(1)


def conflux_library():
    given = os.environ.get("CONFLUX_LIB")
    if given:
        return pathlib.Path(given).resolve()
    build = HERE / "build" / "core"
    subprocess.check_call(["cmake", "-S", str(REPO), "-B", str(build), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                           "-DCFX_BUILD_TESTS=OFF", "-DCFX_BUILD_PERF=OFF", "-DCFX_BUILD_STATIC=OFF",
                           "-DCFX_BUILD_TORCH=OFF"])
    subprocess.check_call(["cmake", "--build", str(build), "--target", "conflux"])
    return (build / "comm" / "libconflux.so").resolve()


class BuildWithLibrary(BuildExtension):
    """Builds the extension, then puts libconflux.so.<major> beside it."""

    def run(self):
        lib = conflux_library()
        soname = "libconflux.so." + version().split(".")[0]
        link_dir = HERE / "build" / "link"
        link_dir.mkdir(parents=True, exist_ok=True)
        for name in (soname, "libconflux.so"):
            target = link_dir / name
            if target.exists() or target.is_symlink():
                target.unlink()
            target.symlink_to(lib)
        for ext in self.extensions:
            ext.library_dirs.append(str(link_dir))
        super().run()
        for ext in self.extensions:
            shutil.copy2(lib, pathlib.Path(self.get_ext_fullpath(ext.name)).parent / soname)


setup(
    version=version(),
    options={"build": {"build_base": os.environ["CONFLUX_BUILD_BASE"]}} if os.environ.get("CONFLUX_BUILD_BASE") else {},
    ext_modules=[
        CppExtension(
            name="torch_conflux._C",
            sources=sorted(str(p.relative_to(HERE)) for p in (HERE / "torch_conflux" / "csrc").glob("*.cc")),
            include_dirs=[str(REPO / "comm" / "include")],
            libraries=["conflux"],
            extra_compile_args=["-O2", "-Wall", "-Wno-unused-parameter"],
            extra_link_args=["-Wl,-rpath,$ORIGIN"],
        )
    ],
    cmdclass={"build_ext": BuildWithLibrary},
)
