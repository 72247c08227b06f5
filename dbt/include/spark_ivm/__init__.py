"""Package data of the spark_ivm adapter: its dbt_project.yml (which names the macros folder)."""

import os

# dbt loads the plugin's internal project from this folder (AdapterPlugin.include_path).
# realpath: a strict editable install links this file from a tree of its own; the macros are
# found relative to the real file in the repository.
PACKAGE_PATH = os.path.dirname(os.path.realpath(__file__))
