"""Exceptions raised by the txstate_spark helpers. Each message says what to do next."""


class TxStateError(Exception):
    """Base class of every error raised by txstate_spark."""


class TxStateJarNotFoundError(TxStateError, FileNotFoundError):
    """The txstate-spark jar could not be found (neither ``$TXSTATE_SPARK_JAR`` nor the bundled one)."""


class TxStateUnsupportedSparkError(TxStateError, RuntimeError):
    """No txstate-spark jar fits the Spark version that will run (the message names the supported lines)."""


class TxStateConfigurationError(TxStateError, RuntimeError):
    """The provider cannot be configured from here (a JVM already running, Spark Connect, bad option)."""


class TxStateSettingError(TxStateConfigurationError, ValueError):
    """A txstate setting's name or value is wrong: the message names the setting (as given and in
    full), the value and a valid example, or the closest known name. Raised before any JVM starts;
    ``python -m txstate_spark`` exits 2 on it."""


class StateQueryError(TxStateError, ValueError):
    """An interactive query could not be made or read (see :mod:`txstate_spark.query`).

    Raised for a key that does not fit the store's key schema, an unknown checkpoint, operator or
    store (the JVM's ``[TXSTATE_QUERY_...]`` errors, message kept), reading ``result`` of a failed
    partition (the message then starts with the partition's failure reason), or an unsupported
    session (Spark Connect). Partition failures themselves are results, not exceptions: see
    ``QueryResult.is_success`` and ``QueryResult.failure_reason``.
    """


class TxStateMigrationError(TxStateError, RuntimeError):
    """``migrate`` refused or failed (the JVM's ``[TXSTATE_MIGRATION_...]`` message, kept whole).

    Refusals leave the checkpoint unchanged; the message says what to do (stop the query, roll
    back uncommitted offsets, use another destination...).
    """


class TxStateCheckpointError(TxStateError, ValueError):
    """``inspect`` or ``verify`` was given something that is not a streaming query's checkpoint, or
    a bad option (the JVM's ``[TXSTATE_OPERATE_...]`` message, kept whole: it names the path and what
    to do). ``python -m txstate_spark inspect|verify`` exits 2 on it. Damage found in a checkpoint is
    not an error but a ``Verification`` finding."""
