"""The arrows between src/power's folders go collector -> rules -> readers only (src/power/CMakeLists.txt):
a reader includes no rule or collector header, a rule no collector header, and every source file lives
in one of the three folders. Usage: test_layers.py SOURCE_DIR (Debian's /usr/bin/python3)."""
import os
import re
import sys

LAYERS = ["readers", "rules", "collector"]  # each may include itself and the ones before it
INCLUDE = re.compile(r'^#include "power/([a-z_]+)/[a-z_]+\.h"', re.M)


def violations(power_dir):
    out = []
    for name in sorted(os.listdir(power_dir)):
        if os.path.isfile(os.path.join(power_dir, name)) and name != "CMakeLists.txt":
            out.append(f"src/power/{name}: every source file belongs in {', '.join(LAYERS)}")
    for rank, layer in enumerate(LAYERS):
        folder = os.path.join(power_dir, layer)
        for name in sorted(os.listdir(folder)):
            if not name.endswith((".h", ".cc")):
                continue
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                text = f.read()
            for target in INCLUDE.findall(text):
                if target not in LAYERS:
                    out.append(f"src/power/{layer}/{name} includes power/{target}/, not a known folder")
                elif LAYERS.index(target) > rank:
                    out.append(f"src/power/{layer}/{name} includes power/{target}/: an arrow {layer} -> {target}")
    return out


def main():
    power_dir = os.path.join(sys.argv[1], "src", "power")
    found = violations(power_dir)
    for v in found:
        print(v)
    print(f"power layers: {len(found)} violation(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
