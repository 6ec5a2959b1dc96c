package txstate.spark

import org.apache.spark.sql.execution.streaming.state.{KeyStateEncoderSpec, RocksDBKeyStateEncoder}

/** Which families allow range scans and range deletes: from Spark 4.2 its key encoders say. */
private[spark] object KeyOrder {
  def supportsRangeScan(encoder: RocksDBKeyStateEncoder, spec: KeyStateEncoderSpec): Boolean =
    encoder.supportsRangeScan

  def supportsDeleteRange(encoder: RocksDBKeyStateEncoder, spec: KeyStateEncoderSpec): Boolean =
    encoder.supportsDeleteRange
}
