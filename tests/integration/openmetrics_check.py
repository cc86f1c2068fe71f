#!/usr/bin/env python3
"""openmetrics_check.py - a strict checker of the OpenMetrics text that
`depfs status --prometheus` prints (used by test_cli.sh).

    openmetrics_check.py FILE
        checks every line; exit 0 when valid, else prints the first fault
        ("line N: ...") and exits 1
    openmetrics_check.py FILE NAME [LABEL=VALUE ...]
        checks, then prints the value of the one sample NAME whose labels
        include those given (exit 1 when none or several match)

What it holds the text to: no blank lines and no comments but "# HELP
name text" and "# TYPE name gauge|counter", each once per family and both
before the family's first sample; a family's lines contiguous; metric
names match [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]*
(not "__"-prefixed, none twice), label values quoted with only \\\\, \\"
and \\n escaped; a counter's samples are its name + "_total", a gauge's its
name; values are numbers (or NaN, +Inf, -Inf); no sample twice; the text
ends with "# EOF" and a newline, and nothing after.
"""
import math
import re
import sys

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
SAMPLE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^\n]*\})? (\S+)\Z")
TYPES = ("gauge", "counter")


class Fault(Exception):
    pass


def parse_labels(text):
    """{name: value} of '{a="x",b="y"}'."""
    labels, i = {}, 1
    while text[i] != "}":
        eq = text.index("=", i)
        name = text[i:eq]
        if not LABEL.match(name) or name.startswith("__"):
            raise Fault("bad label name %r" % name)
        if name in labels:
            raise Fault("label %r twice" % name)
        if text[eq + 1] != '"':
            raise Fault("label %r: value not quoted" % name)
        j, value = eq + 2, []
        while text[j] != '"':
            if text[j] == "\\":
                esc = text[j + 1]
                if esc not in '\\"n':
                    raise Fault("label %r: bad escape \\%s" % (name, esc))
                value.append("\n" if esc == "n" else esc)
                j += 2
            else:
                value.append(text[j])
                j += 1
        labels[name] = "".join(value)
        i = j + 1
        if text[i] == ",":
            i += 1
        elif text[i] != "}":
            raise Fault("junk after label %r" % name)
    if i != len(text) - 1:
        raise Fault("junk after the labels")
    return labels


def number(text):
    if text in ("NaN", "+Inf", "-Inf"):
        return float(text.replace("Inf", "inf").replace("NaN", "nan"))
    if not re.match(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\Z", text):
        raise Fault("value %r is not a number" % text)
    return float(text)


class Checker:
    def __init__(self):
        self.help, self.type = {}, {}
        self.current = None   # the family whose lines we are in
        self.closed = set()   # families whose lines ended
        self.samples = []     # (name, labels, value)
        self.seen = set()

    def enter(self, family):
        if family == self.current:
            return
        if family in self.closed:
            raise Fault("family %s is not contiguous" % family)
        if self.current:
            self.closed.add(self.current)
        self.current = family

    def meta(self, line):
        parts = line.split(" ", 3)
        if len(parts) < 4 or parts[1] not in ("HELP", "TYPE"):
            raise Fault("a comment that is not # HELP or # TYPE: %r" % line)
        kind, family, rest = parts[1], parts[2], parts[3]
        if not NAME.match(family):
            raise Fault("bad metric name %r" % family)
        self.enter(family)
        seen = self.help if kind == "HELP" else self.type
        if family in seen:
            raise Fault("second # %s of %s" % (kind, family))
        if any(s[0] in (family, family + "_total") for s in self.samples):
            raise Fault("# %s of %s after its samples" % (kind, family))
        if kind == "TYPE" and rest not in TYPES:
            raise Fault("type %r of %s (gauge or counter only)" % (rest, family))
        seen[family] = rest

    def sample(self, line):
        m = SAMPLE.match(line)
        if not m:
            raise Fault("not a sample: %r" % line)
        name, labels = m.group(1), parse_labels(m.group(2)) if m.group(2) else {}
        base = name[:-len("_total")] if name.endswith("_total") else None
        family = base if base and self.type.get(base) == "counter" else name
        if family not in self.help or family not in self.type:
            raise Fault("sample %s before its family's # HELP and # TYPE" % name)
        if self.type[family] == "counter" and name != family + "_total":
            raise Fault("counter %s's sample is named %s" % (family, name))
        self.enter(family)
        key = (name, tuple(sorted(labels.items())))
        if key in self.seen:
            raise Fault("sample %s%s twice" % (name, m.group(2) or ""))
        self.seen.add(key)
        self.samples.append((name, labels, number(m.group(3))))

    def check(self, text):
        if not text.endswith("# EOF\n"):
            raise Fault("does not end with '# EOF' and a newline")
        lines = text[:-len("# EOF\n")].split("\n")
        if lines[-1] != "":
            raise Fault("'# EOF' is not on a line of its own")
        for n, line in enumerate(lines[:-1], 1):
            try:
                if line.startswith("#"):
                    self.meta(line)
                elif line == "":
                    raise Fault("blank line")
                else:
                    self.sample(line)
            except (Fault, ValueError, IndexError) as e:
                raise Fault("line %d: %s" % (n, e))
        for family in self.type:
            if not any(s[0] in (family, family + "_total") for s in self.samples):
                raise Fault("family %s has no sample" % family)


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    with open(args[0]) as f:
        text = f.read()
    c = Checker()
    try:
        c.check(text)
    except Fault as e:
        print("invalid OpenMetrics: %s" % e)
        return 1
    if len(args) == 1:
        print("valid OpenMetrics: %d families, %d samples" % (len(c.type), len(c.samples)))
        return 0
    want = dict(a.split("=", 1) for a in args[2:])
    hits = [v for name, labels, v in c.samples
            if name == args[1] and all(labels.get(k) == x for k, x in want.items())]
    if len(hits) != 1:
        print("%d samples match %s %s" % (len(hits), args[1], want))
        return 1
    v = hits[0]
    print(int(v) if not math.isnan(v) and v == int(v) else v)
    return 0


if __name__ == "__main__":
    sys.exit(main())
