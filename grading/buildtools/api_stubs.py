#!/usr/bin/env python3
"""Write the two sides of a lab's API from its header (tests/NN_name.hpp).

The judge never links the student's code: each API function is defined in the judge by a
forwarder that sends the call to the runner (grading/judge/calls.hpp), and the runner has a table
that calls the student's function when asked (grading/runner/runner.hpp). Both are written from the
header's declarations, one per line:

    WORKBOOK_STUDENT_FUNCTION void launch_vector_add(const float* a, const float* b, float* c, int n);

    grading/buildtools/api_stubs.py --header tests/01_vector_add.hpp --forward out/01_forward.cpp --serve out/01_serve.cpp
"""
import argparse
import os
import re
import sys

DECLARATION = re.compile(r"^WORKBOOK_STUDENT_FUNCTION\s+(?P<result>.+?)\s*\b(?P<name>\w+)\s*\((?P<params>.*)\)\s*;")


def split_parameters(text):
    """The parameters of a declaration, split at the commas outside template brackets."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"<": 1, ">": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip() and current.strip() != "void":
        parts.append(current.strip())
    return parts


def declarations(header):
    """(name, parameter names, the declaration's parameter text) for each API function."""
    found = []
    with open(header) as lines:
        for line in lines:
            match = DECLARATION.match(line.strip())
            if not match:
                continue
            params = split_parameters(match["params"])
            names = [re.findall(r"\w+", p)[-1] for p in params]
            found.append((match["name"], names, match["params"], match["result"]))
    if not found:
        sys.exit(f"{header}: no WORKBOOK_STUDENT_FUNCTION declaration found")
    return found


def write_if_changed(path, text):
    if os.path.exists(path) and open(path).read() == text:
        return
    with open(path, "w") as out:
        out.write(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--header", required=True)
    parser.add_argument("--forward", required=True, help="the judge's forwarders (.cpp)")
    parser.add_argument("--serve", required=True, help="the runner's table (.cpp)")
    args = parser.parse_args()
    header = os.path.basename(args.header)
    functions = declarations(args.header)
    banner = f"// Written by grading/buildtools/api_stubs.py from tests/{header}: do not edit.\n"

    forward = [banner, "// The judge's side: each API function sends its call to the runner (grading/judge/calls.hpp).\n",
               '#include "grading/judge/checker.hpp"\n', f'#include "{header}"\n', '#include "grading/judge/calls.hpp"\n\n']
    for name, names, params, result in functions:
        forward.append(f"{result} {name}({params})\n{{\n"
                       f"    return workbook::remote::forward<decltype(::{name})>(\"{name}\"{''.join(', ' + n for n in names)});\n"
                       "}\n")
    forward.append("\nnamespace {\nconst bool registered =\n"
                   "    workbook::remote::set_reference_program(WORKBOOK_REFERENCE_RUNNER) &&\n")
    forward.append(" &&\n".join(f"    workbook::remote::register_forwarder(reinterpret_cast<const void*>(&::{name}), \"{name}\")"
                                for name, _, _, _ in functions))
    forward.append(";\n}  // namespace\n")

    serve = [banner, "// The runner's side: the table of the functions it calls for the judge (grading/runner/runner.hpp).\n",
             '#include "grading/protocol/student_api.hpp"\n', f'#include "{header}"\n', '#include "grading/runner/runner.hpp"\n\n',
             "const std::vector<workbook::runner::Function>& workbook::runner::lab_functions()\n{\n",
             "    static const std::vector<Function> functions = {\n"]
    serve.append(",\n".join(f"        serve(\"{name}\", &::{name})" for name, _, _, _ in functions))
    serve.append("};\n    return functions;\n}\n")

    write_if_changed(args.forward, "".join(forward))
    write_if_changed(args.serve, "".join(serve))


if __name__ == "__main__":
    main()
