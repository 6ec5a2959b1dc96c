package txstate.serve

import java.io.File
import javax.net.ssl.{KeyManagerFactory, SSLContext}

import scala.util.control.NonFatal

import txstate.compat.JavaLibrary

/** The TLS context of an HTTPS server, from a PKCS12 or JKS keystore (docs/serving.md, "TLS"). */
object Tls {
  /** `keystore` opened with the password in environment variable `passwordEnv`. */
  def context(keystore: String, passwordEnv: String, env: Map[String, String]): SSLContext = {
    val password = env.get(passwordEnv).map(_.toCharArray)
      .getOrElse(throw ServeErrors.keystorePasswordMissing(keystore, passwordEnv))
    val file = new File(keystore)
    if (!file.isFile) throw ServeErrors.unreadableKeystore(keystore, "no such file")
    try {
      // The type (PKCS12 or JKS) is found from the file's contents.
      val store = JavaLibrary.loadKeyStore(file, password)
      val keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm)
      keys.init(store, password)
      val context = SSLContext.getInstance("TLS")
      context.init(keys.getKeyManagers, null, null)
      context
    } catch {
      // The message of a wrong password or a damaged file names neither the password nor the token.
      case NonFatal(e) => throw ServeErrors.unreadableKeystore(keystore, s"${e.getClass.getSimpleName}: ${e.getMessage}")
    } finally java.util.Arrays.fill(password, '\u0000')
  }
}
