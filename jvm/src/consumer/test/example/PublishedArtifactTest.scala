package example

import java.io.File

import org.scalatest.funsuite.AnyFunSuite

class PublishedArtifactTest extends AnyFunSuite {
  private val published = new File(sys.props("txstate.published")).getCanonicalPath

  test("a build depending on the published artifact links txstate's classes from the jar in that repository") {
    val jar = new File(TxStateChoice.provider.getProtectionDomain.getCodeSource.getLocation.toURI).getCanonicalPath
    assert(jar.startsWith(published + File.separator + "io" + File.separator + "github" + File.separator + "txstate"),
      s"TxStateStoreProvider came from $jar, not from the published repository $published")
    assert(TxStateChoice.settings("spark.sql.streaming.stateStore.providerClass") == "txstate.spark.TxStateStoreProvider")
    assert(TxStateChoice.settings("spark.plugins") == "txstate.spark.TxStatePlugin")
  }
}
