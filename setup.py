"""Package layout: the top-level folders envs/, simulators/ and wrappers/ install as
agentgym.envs, agentgym.simulators and agentgym.wrappers (see DESIGN "Layout").

The package list is computed so that a new env family or simulator needs no edit here.
"""

from setuptools import find_packages, setup

MAPPED = ("envs", "simulators", "wrappers")

packages = find_packages(include=["agentgym", "agentgym.*"])
package_dir = {"agentgym": "agentgym"}
for top in MAPPED:
    package_dir[f"agentgym.{top}"] = top
    packages += [f"agentgym.{name}" for name in find_packages(include=[top, f"{top}.*"])]

setup(packages=packages, package_dir=package_dir)
