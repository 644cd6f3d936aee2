"""Where the installations the suite runs come from: Java, ZooKeeper and BookKeeper.

The one place that locates them, one module per kind:

* :mod:`.java` - the JDK's tools (``java``, ``javac``): ``JAVA_HOME``, then ``PATH``;
* :mod:`.zookeeper` - a ZooKeeper classpath: ``ZOOKEEPER_HOME``, Debian's package, pyspark's
  jars;
* :mod:`.bookkeeper` - validating a ``BOOKKEEPER_HOME``, and installing a BookKeeper version
  from Maven Central into a per-user cache;
* :mod:`.source_builds` - a BookKeeper or ZooKeeper source checkout built with its own Maven
  build into an install named by its version and commit;
* :mod:`.system` - the bookies a run chooses and the system under test it reports;
* :mod:`.errors` - ``JavaNotFound``, ``ZooKeeperNotFound``, ``BookKeeperNotFound``.

It sits below the cluster providers (:mod:`adapters.cluster`) and the Java client, which both
run what it finds. Nothing here is imported by ``adapters/__init__``: importing the package
downloads nothing.
"""
