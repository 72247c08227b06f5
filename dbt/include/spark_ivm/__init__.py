"""Package data of the spark_ivm adapter: dbt_project.yml and the macros folder."""

import os

# dbt loads the plugin's macros from this folder (AdapterPlugin.include_path).
PACKAGE_PATH = os.path.dirname(__file__)
