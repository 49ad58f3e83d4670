#!/usr/bin/env python3
"""Checks the links of a crate's generated documentation (`cargo doc -p CRATE --no-deps`).

Usage: scripts/doc_links.py target/doc processors

Fails on a link into another crate's pages (with `--no-deps` they are not generated: a
re-exported crate must be inlined, so that its pages are the facade's own), on a link to a page
that does not exist, and on an intra-doc link rendered as text (`[`SqliteStore`]` in
brackets: rustdoc resolved the item but has no page for it). Links rustdoc writes into the
documentation of other crates' traits, in the implementations at the end of a page, are not
the crate's and are left alone.
"""
import os
import re
import sys

root, crate = sys.argv[1], sys.argv[2]
href = re.compile(r'href="([^"#?]+)(?:[#?][^"]*)?"')
unlinked = re.compile(r"\[<code>([^<]*)</code>\]")
# Where a page's implementations of traits begin: other crates' trait docs follow.
implementations = re.compile(r'id="(?:trait|synthetic|blanket)-implementations')
dead = {}
checked = 0
for folder, _, files in os.walk(os.path.join(root, crate)):
    for name in files:
        if not name.endswith(".html"):
            continue
        page = os.path.join(folder, name)
        with open(page, encoding="utf-8") as f:
            html = f.read()
        cut = implementations.search(html)
        own = html[: cut.start()] if cut else html
        for text in unlinked.findall(own):
            dead.setdefault(f"[{text}] (an intra-doc link without a page)", os.path.relpath(page, root))
        targets = href.findall(html)
        for target in targets:
            if "://" in target or target.startswith(("mailto:", "javascript:")):
                continue
            # Pages and folders only: rustdoc's unresolved links in other crates' trait docs
            # are paths, not pages.
            if not (target.endswith(".html") or target.endswith("/")):
                continue
            checked += 1
            resolved = os.path.normpath(os.path.join(folder, target))
            relative = os.path.relpath(resolved, root)
            # The "all items" page of an inlined crate is rustdoc's, not generated.
            if relative.endswith("/all.html") and relative.count("/") > 1:
                continue
            foreign = relative.split(os.sep)[0] not in (crate, "static.files", "src", "trait.impl", "type.impl")
            if foreign or not os.path.exists(resolved):
                dead.setdefault(relative, os.path.relpath(page, root))
for target, page in sorted(dead.items()):
    print(f"{page}: dead link to {target}")
print(f"{checked} links checked, {len(dead)} dead", file=sys.stderr)
sys.exit(1 if dead else 0)
