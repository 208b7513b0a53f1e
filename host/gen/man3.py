#!/usr/bin/env python3
"""libmafhost(3), written by the build from host/include/mafhost.h and its parts.

The header is the API's reference (its comments say what each function does, takes,
returns and fails with), so the man page is made from it rather than written beside it: the
header's first comment is the DESCRIPTION, each `/* ---- NAME ---- */` ruler a subsection
with what the header puts under it (its prose, each function's prototype with the comment
above it, each struct and enum with its fields and their comments, each group of
#defines), and the MAFH_E* codes the ERRORS. A MAFH_API function that would be missing
from the page, or a declaration this script cannot read, fails the build. The header's
parts (host/include/mafhost/*.h, each named by a quoted #include) are read where they are
included, as the compiler reads them: the page is the one the whole header makes.

usage: man3.py [--libs 'LIBS'] HEADER > libmafhost.3
  LIBS: what a static link needs beyond -lmafhost (the Makefile's MAFH_LIBS).
"""
import argparse
import os
import re
import sys

RULER = re.compile(r"^/\* -{4} (.+?) -+ \*/$")
INCLUDE = re.compile(r'^#include "([^"]+)"[ \t]*$', re.M)
API_FN = re.compile(r"^MAFH_API\b[^;]*?\b(mafh_\w+)\s*\(", re.M)
ERROR_CODE = re.compile(r"^MAFH_E[A-Z0-9]+$")
PROTO_WIDTH = 72


class Error(Exception):
    pass


# ---- roff ---------------------------------------------------------------------------------

def esc(text):
    """Text for roff: backslashes and hyphens escaped."""
    return text.replace("\\", "\\e").replace("-", "\\-")


def line(text):
    """A text line: escaped, and not taken for a request when it starts with . or '."""
    text = esc(text)
    return "\\&" + text if text[:1] in (".", "'") else text


def bold(text):
    return "\\fB" + esc(text) + "\\fR"


# ---- the header, read -------------------------------------------------------------------

def read_header(path):
    """The header's text with each part it includes in its place. A part (a quoted #include,
    found beside the file that includes it) gives what lies from its first ruler to its
    closing #endif: its own comment and include guard are not the API's."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    base = os.path.dirname(path)

    def part(m):
        name = os.path.join(base, m.group(1))
        try:
            sub = read_header(name)
        except OSError as e:
            raise Error("%s: %s" % (m.group(1), e.strerror))
        start = re.search(RULER.pattern, sub, re.M)
        end = sub.rfind("\n#endif")
        if not start or end < start.start():
            raise Error("%s: no ruler, or no #endif after it" % m.group(1))
        return sub[start.start():end].rstrip("\n") + "\n"

    return INCLUDE.sub(part, text)


def comment_lines(block):
    """The text lines of a /* ... */ block, without the comment's own marks, their
    indentation relative to the comment kept."""
    body = block.strip()
    assert body.startswith("/*") and body.endswith("*/"), block
    body = body[2:-2]
    out = []
    for i, ln in enumerate(body.split("\n")):
        if i == 0:
            out.append(ln[1:] if ln.startswith(" ") else ln)
            continue
        ln = ln.lstrip("\t ")
        if ln.startswith("*"):
            ln = ln[1:]
            ln = ln[1:] if ln.startswith(" ") else ln
        out.append(ln.rstrip())
    while out and not out[-1].strip():
        out.pop()
    return out


def blocks(lines):
    """A comment's lines as blocks: ("para", text), ("item", text, bullet) for an indented
    line and its continuations (a "- " one is a bullet), ("code", lines) for lines indented
    four or more after an empty line."""
    out = []
    cur = None          # the block lines are added to
    item_indent = None  # the indentation of the current item's first line
    after_blank = True
    for ln in lines:
        indent = len(ln) - len(ln.lstrip(" "))
        text = ln.strip()
        if not text:
            if cur and cur[0] == "code":
                cur[1].append("")
            else:
                cur = None
            after_blank = True
            continue
        if cur and cur[0] == "code" and indent >= 4:
            cur[1].append(ln)
        elif after_blank and indent >= 4:
            cur = ["code", [ln]]
            out.append(cur)
        elif indent == 0:
            if cur and cur[0] == "para":
                cur[1] += " " + text
            else:
                cur = ["para", text]
                out.append(cur)
        elif cur and cur[0] == "item" and indent > item_indent:
            cur[1] += " " + text
        else:
            bullet = text.startswith("- ")
            cur = ["item", text[2:] if bullet else text, bullet]
            item_indent = indent
            out.append(cur)
        after_blank = False
    for b in out:
        if b[0] == "code":
            while b[1] and not b[1][-1]:
                b[1].pop()
            strip = min(len(x) - len(x.lstrip(" ")) for x in b[1] if x)
            b[1] = [x[strip:] for x in b[1]]
    return out


def roff_comment(lines):
    out = []
    for b in blocks(lines):
        if b[0] == "para":
            out += [".PP", line(b[1])]
        elif b[0] == "item":
            out += [".IP \\(bu 2" if b[2] else '.IP "" 2', line(b[1])]
        else:
            out += [".PP", ".RS 4", ".nf"] + [line(x) if x else "" for x in b[1]] + \
                [".fi", ".RE"]
    return out


def squeeze(text):
    """A declaration on one line: whitespace runs made one space, none inside parentheses'
    edges."""
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\( ", "(", re.sub(r" \)", ")", text))


def split_members(body, enum):
    """The members of a struct's or enum's body: (declaration, comment lines), the comment
    being the one above the member and the one after it on its line."""
    members = []
    pending = []        # comment lines above the next member
    i = 0
    n = len(body)
    sep = "," if enum else ";"
    while i < n:
        if body.startswith("/*", i):
            end = body.index("*/", i) + 2
            pending += comment_lines(body[i:end])
            i = end
            continue
        if body[i].isspace():
            i += 1
            continue
        # A member: up to its separator at depth 0 (or the body's end, for an enum's last).
        depth = 0
        j = i
        while j < n:
            c = body[j]
            if body.startswith("/*", j) and depth == 0 and enum:
                break
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
            elif c == sep and depth == 0:
                break
            j += 1
        decl = squeeze(body[i:j])
        i = j + 1 if j < n and body[j] == sep else j
        # The comment on the member's own line.
        rest = body[i:body.find("\n", i) if "\n" in body[i:] else n]
        m = re.match(r"\s*(/\*.*?\*/)", rest)
        trailing = []
        if m:
            trailing = comment_lines(m.group(1))
            i += m.end()
        if not decl:
            raise Error("an empty member in: " + body[:60])
        # The comment above and the one beside are two lines of the member's text.
        members.append((decl, pending + ([""] if pending and trailing else []) + trailing))
        pending = []
    if pending:
        raise Error("a comment after the last member in: " + body[:60])
    return members


def read_decl(text, i):
    """The declaration starting at text[i]: up to the ';' that ends it at brace depth 0.
    Returns (its text, the index past it)."""
    depth = 0
    j = i
    while j < len(text):
        if text.startswith("/*", j):
            j = text.index("*/", j) + 2
            continue
        c = text[j]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == ";" and depth == 0:
            return text[i:j + 1], j + 1
        j += 1
    raise Error("a declaration without its ';': " + text[i:i + 60])


def parse(text):
    """The header as (its first comment's lines, [(section, [item])]): an item is
    ("prose", lines) or ("group", comment lines or None, [decl]); a decl is ("define", name,
    value, comment lines), ("proto", text), ("type", kind, name, members, text) for a
    struct or enum with a body, or ("opaque", text) for a forward declaration or a
    typedef."""
    m = re.match(r"\s*(/\*.*?\*/)", text, re.S)
    if not m:
        raise Error("the header does not begin with its comment")
    top = comment_lines(m.group(1))
    sections = []
    items = None
    group = None
    i = m.end()
    n = len(text)
    while i < n:
        eol = text.find("\n", i)
        eol = n if eol < 0 else eol
        ln = text[i:eol]
        s = ln.strip()
        r = RULER.match(s)
        if r:
            items = []
            sections.append((r.group(1), items))
            group = None
            i = eol + 1
            continue
        if not s:
            group = None
            i = eol + 1
            continue
        if items is None or s.startswith(("#if", "#else", "#endif", "#include", "#undef",
                                          "}", "extern \"C\"")):
            # Before the first ruler (the includes, MAFH_API) and the C++ guards: no API.
            i = eol + 1
            continue
        if s.startswith("/*"):
            end = text.index("*/", i) + 2
            lines = comment_lines(text[i:end])
            i = end
            nxt = text[i:text.find("\n", i) + 1 if "\n" in text[i:] else n]
            i += len(nxt)
            # A comment followed at once by a declaration documents it; else it is prose.
            follow = text[i:text.find("\n", i) if "\n" in text[i:] else n].strip()
            if follow and not follow.startswith("/*") and not RULER.match(follow):
                group = ["group", lines, []]
                items.append(group)
            else:
                items.append(("prose", lines))
                group = None
            continue
        if group is None:
            group = ["group", None, []]
            items.append(group)
        if s.startswith("#define"):
            full = ln
            while full.rstrip().endswith("\\"):
                i = eol + 1
                eol = text.find("\n", i)
                eol = n if eol < 0 else eol
                full = full.rstrip()[:-1] + " " + text[i:eol].strip()
            i = eol + 1
            cm = re.search(r"/\*.*?\*/\s*$", full)
            comment = comment_lines(cm.group(0)) if cm else []
            if cm:
                full = full[:cm.start()]
            d = re.match(r"#define\s+(\w+)\s*(.*)$", full.strip())
            if not d:
                raise Error("a #define this script cannot read: " + full.strip())
            group[2].append(("define", d.group(1), squeeze(d.group(2)), comment))
            continue
        decl, i = read_decl(text, i)
        # What follows a declaration on its line (a comment) belongs to it.
        eol = text.find("\n", i)
        tail = text[i:eol if eol >= 0 else n]
        if tail.strip():
            raise Error("text after a declaration: " + tail.strip())
        i = eol + 1 if eol >= 0 else n
        body = re.match(r"\s*(typedef\s+)?(struct|enum)\s+(\w+)\s*\{(.*)\}\s*(\w*)\s*;\s*$",
                        decl, re.S)
        if body:
            members = split_members(body.group(4), body.group(2) == "enum")
            group[2].append(("type", body.group(2), body.group(3), members, decl))
        elif "MAFH_API" in decl:
            group[2].append(("proto", squeeze(decl.replace("MAFH_API", ""))))
        elif re.match(r"\s*(typedef\b|struct\s+\w+\s*;)", decl):
            group[2].append(("opaque", squeeze(decl)))
        else:
            raise Error("a declaration this script cannot read: " + squeeze(decl)[:80])
    return top, sections


# ---- the page -------------------------------------------------------------------------------

def wrap_proto(text):
    """A prototype in lines of at most PROTO_WIDTH, broken after its commas, the lines after
    the first indented."""
    out = []
    cur = ""
    for part in re.split(r"(?<=,) ", text):
        if cur and len(cur) + 1 + len(part) > PROTO_WIDTH:
            out.append(cur)
            cur = "    " + part
        else:
            cur = cur + " " + part if cur else part
    out.append(cur)
    return out


def flat(comment):
    """A member's comment as text lines: a paragraph a line."""
    return [b[1] if b[0] != "code" else " ".join(b[1]) for b in blocks(comment)]


def roff_members(entries):
    """Tagged paragraphs, (tag, text): one without text is a line under the one before,
    not a paragraph of its own."""
    out = []
    tight = False
    for tag, text in entries:
        if text:
            body = []
            for t in text:
                body += ([".br"] if body else []) + [line(t)]
            out += ([".PD"] if tight else []) + [".TP", tag] + body
            tight = False
        elif tight:
            out += [".TP", tag]
        else:
            out += [".TP", tag, ".PD 0"]
            tight = True
    return out + ([".PD"] if tight else [])


def roff_group(comment, decls):
    """A comment and the declarations it documents: the prototypes and the types' names,
    then the comment, then the members of the types and the #defines."""
    out = []
    heads = []
    for d in decls:
        if d[0] in ("proto", "opaque"):
            heads += wrap_proto(d[1])
        elif d[0] == "type":
            heads.append("%s %s" % (d[1], d[2]))
    if heads:
        out += [".PP", ".nf"] + [bold(h) for h in heads] + [".fi"]
    body = roff_comment(comment) if comment else []
    entries = []
    for d in decls:
        if d[0] == "type":
            entries += [(bold(decl + ("" if d[1] == "enum" else ";")), flat(cm))
                        for decl, cm in d[3]]
        elif d[0] == "define":
            entries.append((bold(d[1]) + (" " + esc(d[2]) if d[2] else ""), flat(d[3])))
    body += roff_members(entries)
    if body and heads:
        out += [".RS 4"] + body + [".RE"]
    else:
        out += body
    return out


def page(top, sections, libs, version):
    out = []
    first, rest = [], []
    seen_blank = False
    for ln in top:
        if not ln.strip():
            seen_blank = True
        (rest if seen_blank else first).append(ln)
    name = re.sub(r"^libmafhost:\s*", "", " ".join(x.strip() for x in first)).rstrip(".")
    out += [".\\\" libmafhost(3), made by the build (host/gen/man3.py) from",
            ".\\\" host/include/mafhost.h: edit the header, not this file.",
            '.TH LIBMAFHOST 3 "" "libmafhost %s" "libmafhost"' % version,
            ".nh", ".ad l",
            ".SH NAME", "libmafhost \\- " + esc(name),
            ".SH SYNOPSIS", ".nf", bold("#include <mafhost.h>"), ".fi", ".PP",
            "Link with " + bold("-lmafhost") + " (" + bold("pkg-config --cflags --libs mafhost")
            + "); statically, also with " + bold(libs) + " (" +
            bold("pkg-config --static --libs mafhost") + ").",
            ".SH DESCRIPTION"]
    out += roff_comment(rest)
    errors = []
    for title, items in sections:
        out.append('.SS "%s"' % esc(title[:1].upper() + title[1:]))
        for item in items:
            if item[0] == "prose":
                out += roff_comment(item[1])
                continue
            decls = []
            for d in item[2]:
                if d[0] == "define" and ERROR_CODE.match(d[1]):
                    errors.append(d)
                else:
                    decls.append(d)
            if len(decls) < len(item[2]):
                decls.append(("define", "MAFH_E*", "", ["the error codes: see ERRORS"]))
            out += roff_group(item[1], decls)
    if not errors:
        raise Error("no MAFH_E* code in the header")
    out += [".SH ERRORS",
            "Functions return 0 (" + bold("MAFH_OK") + ") or a negative errno value; the "
            "codes the library itself produces are these (" + bold("mafh_strerror") +
            "() names any code):"]
    for d in errors:
        out += [".TP", bold(d[1]), line(" ".join([d[2]] + flat(d[3])))]
    out += ['.SH "SEE ALSO"', ".BR maf\\-host (1),", ".BR maf\\-launch (1),",
            ".BR pkg\\-config (1)"]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description="libmafhost(3) from mafhost.h")
    ap.add_argument("--libs", default="-lcurl -larchive -lm -lpthread")
    ap.add_argument("header")
    a = ap.parse_args()
    try:
        text = read_header(a.header)
        top, sections = parse(text)
        version = re.search(r'^#define MAFH_VERSION "([^"]+)"', text, re.M)
        if not version:
            raise Error("no MAFH_VERSION in the header")
        out = page(top, sections, a.libs, version.group(1))
    except (Error, ValueError) as e:
        sys.exit("man3.py: %s: %s" % (a.header, e))
    # Every function the header exports is on the page, with its prototype.
    missing = [fn for fn in API_FN.findall(text) if esc(fn) + "(" not in out]
    if missing:
        sys.exit("man3.py: %s: not on the page: %s" % (a.header, ", ".join(missing)))
    sys.stdout.write(out)


if __name__ == "__main__":
    main()
