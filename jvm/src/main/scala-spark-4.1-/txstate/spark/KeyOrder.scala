package txstate.spark

import txstate.compat.StateApi
import txstate.compat.StateApi.{KeyStateEncoderSpec, RangeKeyScanStateEncoderSpec}

/**
 * Which families allow range scans and range deletes. Spark 4.0 and 4.1's key encoders do not say
 * (their operators never ask); the range-scan spec is the one whose key bytes sort like its values.
 */
private[spark] object KeyOrder {
  def supportsRangeScan(encoder: StateApi.KeyEncoder, spec: KeyStateEncoderSpec): Boolean =
    spec.isInstanceOf[RangeKeyScanStateEncoderSpec]

  def supportsDeleteRange(encoder: StateApi.KeyEncoder, spec: KeyStateEncoderSpec): Boolean =
    spec.isInstanceOf[RangeKeyScanStateEncoderSpec]
}
