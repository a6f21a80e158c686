#!/usr/bin/python3
"""Every link of the README, CONTRIBUTING.md and docs/ leads somewhere, and every anchor to a
heading, on GitHub and in the site MkDocs builds; then `mkdocs build --strict` builds that site.

Usage: links_test.py SOURCE_DIR SITE_DIR

Written by hand for the anchors: MkDocs 1.4 (Debian 12's) checks links to pages but not the
anchors in them, and GitHub and Python-Markdown make a heading's anchor by different rules, so
an anchor is accepted only when both rules give it (a heading such as "A -- B" would not be).
"""

import glob
import os
import re
import subprocess
import sys
import unicodedata

source_dir, site_dir = os.path.abspath(sys.argv[1]), sys.argv[2]


def github_slug(text):
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def markdown_slug(text):  # Python-Markdown's toc.slugify, which MkDocs uses
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def prose_lines(path):
    """(line number, text) of the lines outside fenced blocks, inline code removed."""
    fence = False
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if re.match(r"^\s*```", line):
                fence = not fence
                continue
            if not fence:
                yield number, re.sub(r"`[^`]*`", "``", line)


def anchors(path):
    both = set()
    fence = False
    with open(path) as f:
        for line in f:
            if re.match(r"^\s*```", line):
                fence = not fence
                continue
            m = re.match(r"^#{1,6} (.*)", line)
            if m and not fence:
                text = m.group(1).replace("`", "")
                if github_slug(text) == markdown_slug(text):
                    both.add(github_slug(text))
                else:
                    both.add(("only one rule", github_slug(text), markdown_slug(text)))
    return both


def main():
    pages = [os.path.join(source_dir, p) for p in ("README.md", "CONTRIBUTING.md")]
    pages += sorted(glob.glob(os.path.join(source_dir, "docs", "**", "*.md"), recursive=True))
    problems, checked = [], 0
    for page in pages:
        for number, line in prose_lines(page):
            for target in re.findall(r"\]\(([^)\s]+)\)", line):
                if re.match(r"^(https?|mailto):", target):
                    continue
                checked += 1
                where = "%s:%d: %s" % (os.path.relpath(page, source_dir), number, target)
                path, _, anchor = target.partition("#")
                resolved = os.path.normpath(os.path.join(os.path.dirname(page), path)) \
                    if path else page
                if not resolved.startswith(source_dir + os.sep):
                    problems.append(where + ": leads outside the repository")
                    continue
                if not os.path.exists(resolved):
                    problems.append(where + ": no such file")
                    continue
                in_docs = page.startswith(os.path.join(source_dir, "docs") + os.sep)
                if in_docs and not resolved.startswith(os.path.join(source_dir, "docs") + os.sep):
                    problems.append(where + ": a page of the site links outside docs/ (MkDocs "
                                    "cannot follow it; name the file in code instead)")
                if anchor:
                    if not resolved.endswith(".md"):
                        problems.append(where + ": an anchor into a file that is not Markdown")
                    elif anchor not in anchors(resolved):
                        problems.append(where + ": no heading with that anchor (by GitHub's and "
                                        "Python-Markdown's rules both)")
    print("%d links checked in %d pages" % (checked, len(pages)))
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    build = subprocess.run(["mkdocs", "build", "--strict", "--site-dir", site_dir],
                           cwd=source_dir, capture_output=True, text=True)
    print(build.stderr[-3000:])
    if build.returncode != 0:
        sys.exit("mkdocs build --strict failed")


main()
