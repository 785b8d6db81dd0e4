#!/usr/bin/env python3
"""Turns a compiled reference solution into an object that links beside the student's file.

The judge links the reference solution, to compute the expected output of every timed run in its
own process (the reference is timed elsewhere: in a runner of its own, exactly as the student's
file is, docs/grading.md). make bench links every solution into one program too. Each of these
programs would then hold two files that define the same functions and kernels (the checker's
forwarders, or another lab's solution). The solution is compiled exactly as a student's file is;
then this script renames, in its object, every symbol the solution itself defines to the name it
would have inside `namespace NS`:

    launch_vector_add(const float*, const float*, float*, int)
        -> reference::launch_vector_add(const float*, const float*, float*, int)

The checker calls these by their C++ names: it declares them inside the same namespace, with the
types of the student's functions (`decltype(::launch_vector_add) launch_vector_add;`). A symbol
whose namespaced name cannot be formed simply (a template instance, a local static) gets the
plain prefix `NS.`: nothing calls it by name, and it only has to differ from the student's.

What stays as it is: what the solution uses but does not define (the CUDA runtime, common/), and
the weak copies of library inline functions (std::, workbook::, ...), which are the same in every
object. The GPU side is untouched: a kernel keeps its name, and the renamed host stub still
launches the reference's own copy. That the student's file cannot call the reference is
checked when the student's object is read (student_symbols.py --reference).

Usage: reference_object.py --namespace NS --out OUT SOLUTION_OBJECT
"""
import argparse
import re
import shutil
import subprocess
import sys

# Weak symbols in these namespaces are inline library code, the same in every object: left shared.
# (Mangled: std:: is St; the others are their length and name. _ZT.. and _ZGV.. are the tables and
# guard variables of such code, _ZZ its local statics.)
LIBRARY = re.compile(r"^(DW\.ref\.|_Z(T[VISHW]|GV)?Z?(N[KVr]*)?(St|8workbook|9__gnu_cxx|10__cxxabiv1|6thrust|3cub|4cuda))")
SUBSTITUTION = re.compile(r"S([0-9A-Z]*)_")
BASE36 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def fail(message):
    sys.exit("reference_object.py: " + message)


def run(*command):
    r = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        fail("%s failed:\n%s" % (command[0], r.stderr))
    return r.stdout


def shifted(mangled):
    """The same mangled text with every back-reference S<n>_ moved up by one: the namespace
    becomes substitution candidate 0, so each earlier candidate's number grows by one."""
    def bump(m):
        # S_ is candidate 0, S0_ candidate 1, SA_ candidate 11: S<base 36 of n - 1>_ is n.
        n = 0 if m.group(1) == "" else int(m.group(1), 36) + 1
        digits = ""
        while True:  # candidate n + 1 is written with the base-36 digits of n
            digits = BASE36[n % 36] + digits
            n //= 36
            if n == 0:
                return "S" + digits + "_"
    return SUBSTITUTION.sub(bump, mangled)


def in_namespace(symbol, namespace):
    """The mangled name `symbol` would have inside `namespace`, or None if it is not simple."""
    ns = "%d%s" % (len(namespace), namespace)
    m = re.match(r"_Z(\d+)", symbol)
    if m:  # a function at global scope: _Z <name> <parameters>
        end = m.end() + int(m.group(1))
        if symbol[end:end + 1] == "I":  # a template instance: its arguments come first
            return None
        return "_ZN" + ns + symbol[2:end] + "E" + shifted(symbol[end:])
    m = re.match(r"_ZN(K?)", symbol)
    if m:  # a nested name: the namespace goes in front of it
        return "_ZN" + m.group(1) + ns + shifted(symbol[m.end():])
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", symbol) and not symbol.startswith("_Z"):
        return "_ZN%s%d%sE" % (ns, len(symbol), symbol)  # a variable at global scope
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--namespace", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("object")
    a = p.parse_args()

    # Defined symbols with external linkage: nm's type letter is upper case (or u) for those.
    defined = []
    for line in run("nm", "--format=posix", "--defined-only", a.object).splitlines():
        fields = line.split()
        if len(fields) >= 2 and (fields[1].isupper() or fields[1] == "u"):
            defined.append((fields[0], fields[1]))
    names = [name for name, _ in defined]
    readable = dict(zip(names, run("c++filt", *names).splitlines())) if names else {}

    renames = {}
    for name, kind in defined:
        if kind in "WVu" and LIBRARY.match(name):
            continue
        renames[name] = in_namespace(name, a.namespace)
    # Check each namespaced name with the demangler; fall back to the prefix where it differs.
    tried = [new for new in renames.values() if new]
    shown = dict(zip(tried, run("c++filt", *tried).splitlines())) if tried else {}
    for old, new in renames.items():
        if new is None or shown.get(new) != a.namespace + "::" + readable[old]:
            renames[old] = a.namespace + "." + old

    shutil.copyfile(a.object, a.out)
    map_file = a.out + ".renames"
    with open(map_file, "w") as f:
        for old, new in sorted(renames.items()):
            f.write("%s %s\n" % (old, new))
    run("objcopy", "--redefine-syms=" + map_file, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
