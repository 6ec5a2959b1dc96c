"""``python -m txstate_spark COMMAND``: the command line lives in :mod:`txstate_spark.cli`."""

import sys

from txstate_spark.cli import main

if __name__ == "__main__":
    sys.exit(main())
