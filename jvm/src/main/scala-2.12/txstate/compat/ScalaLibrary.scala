package txstate.compat

import scala.util.Try

/**
 * The Scala 2.13 library calls the shared code makes that Scala 2.12 lacks, written for 2.12 with
 * 2.13's names and meaning (docs/ARCHITECTURE.md, "Spark lines"); scala-2.13 has the library's own.
 */
object ScalaLibrary {
  /** 2.13's `scala.util.Using`, as far as the shared code uses it: `resource` and `Manager`. */
  object Using {
    /** Runs `body` on `resource` and closes it; a failing close is added to the body's failure. */
    def resource[R <: AutoCloseable, A](resource: R)(body: R => A): A = {
      val result = try body(resource) catch { case failure: Throwable => throw closeAfter(resource, failure) }
      resource.close()
      result
    }

    /** Collects resources and closes them in reverse order when `Manager { use => ... }` ends. */
    final class Manager private[Using] () {
      private var opened: List[AutoCloseable] = Nil
      def apply[R <: AutoCloseable](resource: R): R = { opened = resource :: opened; resource }
    }

    object Manager {
      def apply[A](body: Manager => A): Try[A] = Try {
        val manager = new Manager
        val result = try body(manager) catch {
          case failure: Throwable => throw manager.opened.foldLeft(failure)((f, r) => closeAfter(r, f))
        }
        manager.opened.foldLeft(Option.empty[Throwable]) { (failed, r) =>
          failed.map(closeAfter(r, _)).orElse(Try(r.close()).failed.toOption)
        }.foreach(failure => throw failure)
        result
      }
    }

    /** Closes `resource` after `failure`: a failure of the close is suppressed in it. */
    private def closeAfter(resource: AutoCloseable, failure: Throwable): Throwable = {
      try resource.close() catch { case closing: Throwable if closing ne failure => failure.addSuppressed(closing) }
      failure
    }
  }

  /** 2.13's `scala.jdk.CollectionConverters`: `asScala` and `asJava`. */
  object CollectionConverters extends scala.collection.convert.DecorateAsJava with scala.collection.convert.DecorateAsScala
}
