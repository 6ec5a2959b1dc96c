"""The txstate settings: their specification (:mod:`.spec`, read from ``settings.json`` beside it, the
file the jar reads too), their names (:mod:`.names`) and turning Python values into checked Spark
settings (:mod:`.values`). The public names are re-exported by :mod:`txstate_spark`.

This module imports none of them on purpose: :mod:`txstate_spark.constants` takes the settings'
prefix from :mod:`.spec`, and :mod:`.names` and :mod:`.values` import the constants, so an import
here would make ``txstate_spark.constants`` wait on itself.
"""
