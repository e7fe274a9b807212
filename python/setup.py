"""Builds torch_conflux, the Conflux backend for torch.distributed (see pyproject.toml).

The extension is compiled by torch.utils.cpp_extension, which takes the C++ standard and the
_GLIBCXX_USE_CXX11_ABI flag from the installed torch. It links libconflux through Conflux's public
C API only; the library is copied into the package beside the extension, whose RPATH is $ORIGIN,
so nothing needs LD_LIBRARY_PATH.

CONFLUX_LIB names an already-built libconflux.so (the project's CMake build passes its own);
without it, the core library is built here with CMake (tools/install-deps.sh installs what that needs).
CONFLUX_CUDA_LIB names libconflux_cuda.so, the CUDA path (CMake passes it when CUDA's toolkit was
found; without CONFLUX_LIB it is built here when the toolkit is there). With it the backend serves
CUDA tensors (csrc/cuda_path_staged.cc); without it, it refuses them (csrc/cuda_path_none.cc).
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


def conflux_libraries():
    """(libconflux.so, libconflux_cuda.so or None)."""
    given = os.environ.get("CONFLUX_LIB")
    if given:
        cuda = os.environ.get("CONFLUX_CUDA_LIB")
        return pathlib.Path(given).resolve(), pathlib.Path(cuda).resolve() if cuda else None
    build = HERE / "build" / "core"
    subprocess.check_call(["cmake", "-S", str(REPO), "-B", str(build), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                           "-DCFX_BUILD_TESTS=OFF", "-DCFX_BUILD_PERF=OFF", "-DCFX_BUILD_STATIC=OFF",
                           "-DCFX_BUILD_TORCH=OFF"])
    targets = subprocess.run(["cmake", "--build", str(build), "--target", "help"], capture_output=True, text=True)
    cuda = "conflux_cuda" in targets.stdout
    subprocess.check_call(["cmake", "--build", str(build), "--target", "conflux", *(["conflux_cuda"] if cuda else [])])
    return ((build / "comm" / "libconflux.so").resolve(),
            (build / "cuda" / "libconflux_cuda.so").resolve() if cuda else None)


CSRC = HERE / "torch_conflux" / "csrc"
CUDA_PATH = {False: "cuda_path_none.cc", True: "cuda_path_staged.cc"}


class BuildWithLibrary(BuildExtension):
    """Builds the extension with the CUDA path when libconflux_cuda is there, then puts
    libconflux.so.<major> (and libconflux_cuda.so.<major>) beside it."""

    def run(self):
        lib, cuda_lib = conflux_libraries()
        major = version().split(".")[0]
        link_dir = HERE / "build" / "link"
        link_dir.mkdir(parents=True, exist_ok=True)
        libs = {"conflux": lib, **({"conflux_cuda": cuda_lib} if cuda_lib else {})}
        for name, path in libs.items():
            for link in (f"lib{name}.so.{major}", f"lib{name}.so"):
                target = link_dir / link
                if target.exists() or target.is_symlink():
                    target.unlink()
                target.symlink_to(path)
        for ext in self.extensions:
            ext.library_dirs.append(str(link_dir))
            none = str((CSRC / CUDA_PATH[False]).relative_to(HERE))
            ext.sources = [str((CSRC / CUDA_PATH[True]).relative_to(HERE)) if s == none and cuda_lib else s
                           for s in ext.sources]
            if cuda_lib:
                ext.include_dirs.append(str(REPO / "cuda" / "include"))
                ext.libraries.append("conflux_cuda")
        super().run()
        for ext in self.extensions:
            for name, path in libs.items():
                shutil.copy2(path, pathlib.Path(self.get_ext_fullpath(ext.name)).parent / f"lib{name}.so.{major}")


setup(
    version=version(),
    options={"build": {"build_base": os.environ["CONFLUX_BUILD_BASE"]}} if os.environ.get("CONFLUX_BUILD_BASE") else {},
    ext_modules=[
        CppExtension(
            name="torch_conflux._C",
            sources=sorted(str(p.relative_to(HERE)) for p in CSRC.glob("*.cc") if p.name != CUDA_PATH[True]),
            include_dirs=[str(REPO / "comm" / "include")],
            libraries=["conflux"],
            # -g1: line tables for debug information (backtraces name file and line), not Python's
            # full -g, whose variable information for torch's headers was half of each file's
            # compile time (38 s against 20 for backend.cc on the 2-core VM).
            extra_compile_args=["-O2", "-g1", "-Wall", "-Wno-unused-parameter"],
            # --exclude-libs: a toolchain that links parts of libstdc++ statically (the GPU machine's
            # g++ did) would otherwise export them, and libconflux's std::locale and std::thread would
            # bind to that copy: free(): invalid pointer in the bootstrap thread, seen on an H200 machine.
            extra_link_args=["-Wl,-rpath,$ORIGIN", "-Wl,--exclude-libs,ALL"],
        )
    ],
    cmdclass={"build_ext": BuildWithLibrary},
)
