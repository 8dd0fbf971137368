"""Stand-in for pip's get-pip.py bootstrap script, for ansible-test.

ansible-test builds each sanity test's virtual environment without pip and
then runs ``get-pip-<version>.py`` from ansible's CI file server, which is not
reachable from every machine (ours reach only the package registries). This
does the same from what is at hand: pip from the interpreter's own
``ensurepip`` wheel, then ``pip install`` of the packages ansible-test asked
for (``pip==<version>`` among them) from the package index. scripts/sanity.sh
puts it where ansible-test looks for its cached copy when that is missing.
"""
import subprocess
import sys

# options only get-pip.py understands
GET_PIP_ONLY = ("--no-setuptools", "--no-wheel")

# in a child process: ensurepip drops the PIP_* environment and the pip
# configuration files (index, certificates) of the process it runs in
subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"], stdout=subprocess.DEVNULL)
args = [a for a in sys.argv[1:] if a not in GET_PIP_ONLY]
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", "--upgrade"] + args))
