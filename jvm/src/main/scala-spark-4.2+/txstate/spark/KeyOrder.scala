package txstate.spark

import txstate.compat.StateApi
import txstate.compat.StateApi.KeyStateEncoderSpec

/** Which families allow range scans and range deletes: from Spark 4.2 its key encoders say. */
private[spark] object KeyOrder {
  def supportsRangeScan(encoder: StateApi.KeyEncoder, spec: KeyStateEncoderSpec): Boolean =
    encoder.supportsRangeScan

  def supportsDeleteRange(encoder: StateApi.KeyEncoder, spec: KeyStateEncoderSpec): Boolean =
    encoder.supportsDeleteRange
}
