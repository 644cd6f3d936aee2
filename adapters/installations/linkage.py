"""Whether a release's own classes link against the jars resolved from its POM.

An install is complete when what its programs need loads from it. Which classes those are is
the release's to say, not a list kept here (a list of class names is what the next release
breaks: 4.18.0 moved the wire and metadata encodings from protobuf-java to LightProto). So
the check is decided from the release itself: every class of its own jars (the artifacts of
the product's groups at the release's version, which Maven resolved from its POM) is loaded
and linked, with the types of its fields, methods and constructors and its supertypes,
against exactly the jars Maven resolved. A type none of them holds is a missing dependency.

It runs in a JVM of its own (``bkconform.LinkCheck``, compiled on first use with no jar on its
class path: it loads the release's classes by reflection), once per install: a later use
finds every jar the same size, so the same answer (:func:`adapters.installations.releases.verify`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from adapters.errors import AdapterError
from adapters.installations import java_programs
from adapters.installations.java import find_java, find_javac
from adapters.user_state import bkconform_home

LINK_TIMEOUT = 300.0

PROGRAM = java_programs.JavaProgram(
    "bkconform.LinkCheck",
    """\
package bkconform;

import java.io.File;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

/** args: a file naming the class path's jars (one per line), then the jars whose classes to
 * link. Prints "classes N", then "unlinked <class> <missing type>" for each class that does
 * not link (its first missing type). */
public final class LinkCheck {
    public static void main(String[] args) throws Exception {
        List<URL> urls = new ArrayList<>();
        for (String line : Files.readAllLines(new File(args[0]).toPath(), StandardCharsets.UTF_8)) {
            if (!line.isEmpty()) urls.add(new File(line).toURI().toURL());
        }
        ClassLoader loader =
            new URLClassLoader(urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader());
        int classes = 0;
        StringBuilder out = new StringBuilder();
        for (int i = 1; i < args.length; i++) {
            try (JarFile jar = new JarFile(new File(args[i]))) {
                for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements();) {
                    String name = e.nextElement().getName();
                    if (!name.endsWith(".class") || name.startsWith("META-INF/")
                        || name.endsWith("module-info.class")
                        || name.endsWith("package-info.class")) {
                        continue;
                    }
                    String type = name.substring(0, name.length() - 6).replace('/', '.');
                    classes++;
                    try {
                        Class<?> c = Class.forName(type, false, loader);
                        c.getDeclaredFields();
                        c.getDeclaredMethods();
                        c.getDeclaredConstructors();
                        c.getGenericSuperclass();
                        c.getGenericInterfaces();
                    } catch (TypeNotPresentException failure) {
                        unlinked(out, type, failure.typeName());
                    } catch (LinkageError | ClassNotFoundException failure) {
                        unlinked(out, type, String.valueOf(failure.getMessage()));
                    }
                }
            }
        }
        System.out.print("classes " + classes + "\\n" + out);
    }

    private static void unlinked(StringBuilder out, String type, String missing) {
        String name = missing.replace('/', '.').replace(' ', '_');
        out.append("unlinked ").append(type).append(' ').append(name).append('\\n');
    }
}
""",
)


class LinkCheckError(AdapterError):
    """The check itself could not run (no JDK, a JVM that failed): the message says why."""


@dataclass(frozen=True)
class Linkage:
    """How many classes of the release's own jars were linked, and for each type no jar
    holds, the classes that need it."""

    classes: int
    missing: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return self.classes > 0 and not self.missing

    def describe(self, shown: int = 4) -> str:
        """``com.google.protobuf.Message (needed by 12 classes, e.g. ...), ...``."""
        parts = [
            f"{missing} (needed by {len(needers)} "
            f"class{'es' if len(needers) != 1 else ''}, e.g. {needers[0]})"
            for missing, needers in sorted(self.missing.items(), key=lambda kv: -len(kv[1]))
        ]
        more = f", and {len(parts) - shown} more" if len(parts) > shown else ""
        return ", ".join(parts[:shown]) + more


def parse(output: str) -> Linkage:
    """The probe's output back (see :data:`PROGRAM`)."""
    classes = -1
    missing: dict[str, list[str]] = {}
    for line in output.splitlines():
        words = line.split(" ", 2)
        if words[0] == "classes" and len(words) == 2:
            classes = int(words[1])
        elif words[0] == "unlinked" and len(words) == 3:
            missing.setdefault(words[2], []).append(words[1])
    if classes < 0:
        raise LinkCheckError(f"the link check printed no class count:\n{output[-2000:]}")
    return Linkage(classes, {k: tuple(v) for k, v in missing.items()})


def check(
    own_jars: Sequence[Path],
    classpath: Sequence[Path],
    *,
    environ: Mapping[str, str] | None = None,
    timeout: float = LINK_TIMEOUT,
) -> Linkage:
    """Link every class of ``own_jars`` against ``classpath`` (which holds them too)."""
    java, javac = find_java(environ), find_javac(environ)
    base = bkconform_home(environ) / "link-check"
    with tempfile.TemporaryDirectory(prefix="bkconform-link-") as scratch:
        empty = Path(scratch) / "lib"
        empty.mkdir()
        try:
            classes = java_programs.compiled_classes(
                PROGRAM, lib=empty, key_jars=(), javac=javac, base=base
            )
        except java_programs.JavaCompileError as exc:
            raise LinkCheckError(str(exc)) from exc
        listing = Path(scratch) / "classpath.txt"
        listing.write_text("".join(f"{jar}\n" for jar in classpath), encoding="utf-8")
        command = [java, "-cp", str(classes), PROGRAM.class_name, str(listing)]
        done = java_programs.run_tool(
            [*command, *(str(jar) for jar in own_jars)],
            timeout=timeout,
            error=LinkCheckError,
            what="the link check",
        )
    if done.returncode != 0:
        raise LinkCheckError(
            f"the link check failed (exit {done.returncode}):\n"
            f"{(done.stdout + done.stderr)[-2000:]}"
        )
    return parse(done.stdout)


__all__ = ["LINK_TIMEOUT", "PROGRAM", "LinkCheckError", "Linkage", "check", "parse"]
