"""Exceptions raised by the txstate_spark helpers. Each message says what to do next."""


class TxStateError(Exception):
    """Base class of every error raised by txstate_spark."""


class TxStateJarNotFoundError(TxStateError, FileNotFoundError):
    """The txstate-spark jar could not be found (neither ``$TXSTATE_SPARK_JAR`` nor the bundled one)."""


class TxStateConfigurationError(TxStateError, RuntimeError):
    """The provider cannot be configured from here (a JVM already running, Spark Connect, bad option)."""
