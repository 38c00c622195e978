"""The package layout, which pyproject.toml cannot say: flows/ and scorers/ install as evalduck.flows and
evalduck.scorers, with every subpackage found (so a new folder needs no edit here). Namespace packages
too: the report's data folders (report/html/charts, templates) are packages of data files to setuptools,
which warns at every install when they are not listed."""

from setuptools import find_namespace_packages, setup

FOLDERS = {"evalduck.flows": "flows", "evalduck.scorers": "scorers"}

setup(
    package_dir={"evalduck": "evalduck", **FOLDERS},
    packages=["evalduck"] + [
        f"{name}{sub[len(folder):]}" for name, folder in FOLDERS.items()
        for sub in find_namespace_packages(include=[folder, f"{folder}.*"], exclude=["*__pycache__*"])
    ],
)
