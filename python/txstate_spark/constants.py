"""Names shared by the Python helpers and the JVM plugin. They must match the Scala side."""

from typing import Final

from txstate_spark.settings.spec import PREFIX

#: The state store provider class inside the txstate-spark jar.
PROVIDER_CLASS: Final = "txstate.spark.TxStateStoreProvider"

#: Spark's setting that selects the state store provider for new streaming queries.
PROVIDER_CLASS_KEY: Final = "spark.sql.streaming.stateStore.providerClass"

#: The Spark plugin inside the jar that registers txstate's executor metrics in Spark's metrics system.
PLUGIN_CLASS: Final = "txstate.spark.TxStatePlugin"

#: Spark's comma-separated list of plugin classes.
PLUGINS_KEY: Final = "spark.plugins"

#: Every txstate setting is ``SETTINGS_PREFIX + <camelCaseName>`` (``spark.sql.streaming.stateStore.txstate.``,
#: from the settings' specification, settings/settings.json).
SETTINGS_PREFIX: Final = PREFIX

#: Environment variable naming the jar to use instead of the one bundled in the wheel.
JAR_ENV_VAR: Final = "TXSTATE_SPARK_JAR"
