package txstate.spark

import org.apache.spark.sql.execution.streaming.state.{KeyStateEncoderSpec, RangeKeyScanStateEncoderSpec, RocksDBKeyStateEncoder}

/**
 * Which families allow range scans and range deletes. Spark 4.0 and 4.1's key encoders do not say
 * (their operators never ask); the range-scan spec is the one whose key bytes sort like its values.
 */
private[spark] object KeyOrder {
  def supportsRangeScan(encoder: RocksDBKeyStateEncoder, spec: KeyStateEncoderSpec): Boolean =
    spec.isInstanceOf[RangeKeyScanStateEncoderSpec]

  def supportsDeleteRange(encoder: RocksDBKeyStateEncoder, spec: KeyStateEncoderSpec): Boolean =
    spec.isInstanceOf[RangeKeyScanStateEncoderSpec]
}
