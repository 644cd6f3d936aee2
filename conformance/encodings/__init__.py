"""Do two BookKeeper releases put the same bytes on the wire and in ZooKeeper?

``bkconform encodings compare`` (issue 47): BookKeeper 4.18.0 generates its protocol and
metadata classes with LightProto instead of protobuf-java. For every request and answer kind
the suite uses, and every znode a release writes, this package captures what each release
produces and compares them byte for byte, explaining each difference.

Modules, in the order the work flows: ``probes`` (the raw requests of the error kinds),
``captures`` (the data, in the golden captures' format), ``live`` (capturing a release on a
local cluster), ``kinds`` (what each frame or znode is, normalised), ``compare`` (kind by kind,
with the rules that explain differences), ``metadata_reads`` (the suite's reader and each
release's shell on the metadata), ``report`` (verdict, Markdown, JSON) and ``run`` (the
command's work). See docs/findings/lightproto-4.18.0-encodings.md.
"""
