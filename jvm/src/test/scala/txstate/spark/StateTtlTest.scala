package txstate.spark

import org.scalatest.funsuite.AnyFunSuite

final class StateTtlTest extends AnyFunSuite with ProviderFixture {
  private val ttl = TxStateConf.prefix + "ttl"
  private def operator(id: String) = TxStateConf.prefix + "ttl.operator." + id

  test("ttl takes a duration with a unit, for every operator unless one has its own") {
    val conf = TxStateConf.from(storeConf(ttl -> "30m", operator("2") -> "1500 ms", operator("3") -> "OFF"))
    assert(conf.ttl.forOperator(0) == Some(30L * 60 * 1000))
    assert(conf.ttl.forOperator(2) == Some(1500L))
    assert(conf.ttl.forOperator(3).isEmpty, "off exempts one operator")
    val days = TxStateConf.from(storeConf(ttl -> "7d", operator("0") -> "2h", operator("1") -> "45s"))
    assert(days.ttl.forOperator(5) == Some(7L * 86400000) && days.ttl.forOperator(0) == Some(7200000L))
    assert(days.ttl.forOperator(1) == Some(45000L))
  }

  test("without ttl settings nothing expires") {
    assert(TxStateConf.from(storeConf()).ttl.forOperator(0).isEmpty)
    assert(TxStateConf.from(storeConf(operator("4") -> "1h")).ttl.forOperator(0).isEmpty)
  }

  test("a bad duration or operator id is refused naming the setting and saying what is expected") {
    for ((key, value) <- Seq(ttl -> "10", ttl -> "0s", ttl -> "-5m", ttl -> "3 weeks", operator("1") -> "soon")) {
      val e = intercept[IllegalArgumentException](TxStateConf.from(storeConf(key -> value)))
      assert(e.getMessage.contains(s"[TXSTATE_INVALID_SETTING] $key") && e.getMessage.contains(s"'$value'"),
        e.getMessage)
    }
    val noId = intercept[IllegalArgumentException](TxStateConf.from(storeConf(operator("join") -> "1h")))
    assert(noId.getMessage.contains(operator("join")) && noId.getMessage.contains("operator id"), noId.getMessage)
    val typo = intercept[IllegalArgumentException](TxStateConf.from(storeConf(TxStateConf.prefix + "ttl.operater.1" -> "1h")))
    assert(typo.getMessage.contains("is not a txstate setting"), typo.getMessage)
  }
}
