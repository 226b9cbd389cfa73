"""The gelu_fusion Python package, built by CMake.

    /usr/bin/python3 -m venv venv
    venv/bin/pip install torch==2.11.0 wheel                 # the PyTorch it builds for
    venv/bin/pip install --no-build-isolation .              # or: pip wheel ...

CMake builds the extension (adapters/torch: the library's kernels and the
torch ops) in the build directory GELU_FUSION_BUILD_DIR, by default `build`,
the one `make` uses: an existing one is reused as it is configured (after
`make`, nothing is recompiled), a missing one is configured as `make` would.
The package is then adapters/torch/gelu_fusion/*.py with the extension and
_version.py that CMake wrote to <build>/python/gelu_fusion. A build
directory configured here builds against the torch of the Python running
pip (GELU_PYTHON); one that `make` configured, against the project's venv
(.venv), which has the same pinned torch.
"""
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def project_version():
    """The version in project(gelu_fusion VERSION ...) of CMakeLists.txt."""
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(gelu_fusion\s+VERSION\s+([0-9.]+)", f.read())
    if not m:
        raise RuntimeError("CMakeLists.txt: no project(gelu_fusion VERSION x.y.z)")
    return m.group(1)


class CMakeBuild(build_ext):
    """Builds the CMake target gelu_fusion_python and copies its outputs."""

    def get_ext_filename(self, fullname):
        # Loaded by torch.ops.load_library, not imported: the plain name
        # _load.py looks for, without Python's ABI suffix.
        return os.path.join(*fullname.split(".")) + ".so"

    def run(self):
        build_dir = os.path.abspath(
            os.environ.get("GELU_FUSION_BUILD_DIR") or os.path.join(ROOT, "build"))
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            subprocess.check_call(["cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja",
                                   "-DCMAKE_BUILD_TYPE=Release",
                                   "-DGELU_PYTHON=" + sys.executable])
        # One compile per core and per 2 GiB of available memory.
        jobs = os.environ.get("JOBS") or subprocess.check_output(
            ["bash", os.path.join(ROOT, "scripts", "jobs.sh")], text=True).strip()
        subprocess.check_call(["cmake", "--build", build_dir, "-j", jobs,
                               "--target", "gelu_fusion_python"])
        built = os.path.join(build_dir, "python", "gelu_fusion")
        for ext in self.extensions:
            dest = self.get_ext_fullpath(ext.name)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copyfile(os.path.join(built, os.path.basename(dest)), dest)
            shutil.copyfile(os.path.join(built, "_version.py"),
                            os.path.join(os.path.dirname(dest), "_version.py"))


# setuptools' own build files go under build/, next to CMake's.
os.makedirs(os.path.join(ROOT, "build"), exist_ok=True)

setup(
    name="gelu_fusion",
    version=project_version(),
    description="Fused GELU kernels for PyTorch (gelu, bias_gelu, add_gelu, "
                "geglu; f32, bf16, f16; CPU)",
    python_requires=">=3.9",
    install_requires=["torch"],
    package_dir={"": "adapters/torch"},
    packages=find_packages("adapters/torch", include=["gelu_fusion", "gelu_fusion.*"]),
    ext_modules=[Extension("gelu_fusion._gelu_fusion_ops", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": os.path.join("build", "setuptools")},
             "egg_info": {"egg_base": "build"}},
    zip_safe=False,
)
