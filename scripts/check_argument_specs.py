"""Fail when a role's meta/argument_specs.yml drifts from its defaults/main.yml.

For every roles/<role>/ that has defaults/main.yml or meta/argument_specs.yml:

* entry point ``main``: its options are exactly the keys of defaults/main.yml,
  except options marked ``required: true`` (those have no default);
* other entry points (``tasks_from``): every option is a key of defaults/main.yml
  or required;
* every option (and sub-option, recursively) has a ``type`` and a non-empty
  ``description``;
* an option that states a ``default`` states the same value as defaults/main.yml;
* no variable in defaults/main.yml starts with ``__`` (internal variables belong
  in vars/ or set_fact, not in the documented interface).

Usage: scripts/check_argument_specs.py [ROLES_DIR ...]   (default: roles/ of the repo)
Exit code 0 = consistent, 1 = drift (every problem is listed), 2 = usage error.
"""

import os
import sys

try:
    import yaml
except ImportError:  # pragma: no cover
    sys.stderr.write("PyYAML is required (it comes with ansible-core)\n")
    sys.exit(2)


class _Loader(yaml.SafeLoader):
    """SafeLoader that tolerates Ansible's !unsafe / !vault tags."""


def _tagged(loader, _suffix, node):
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_mapping(node)


_Loader.add_multi_constructor("!", _tagged)


class SpecFileError(Exception):
    pass


def load(path):
    try:
        with open(path) as f:
            return yaml.load(f, Loader=_Loader)
    except yaml.YAMLError as e:
        raise SpecFileError("%s: invalid YAML: %s" % (path, str(e).replace("\n", " ")))


def check_options(options, where, problems):
    for name, spec in sorted((options or {}).items()):
        loc = "%s.%s" % (where, name)
        if not isinstance(spec, dict):
            problems.append("%s: option spec must be a mapping" % loc)
            continue
        if not spec.get("type"):
            problems.append("%s: no type" % loc)
        desc = spec.get("description")
        if not desc or (isinstance(desc, list) and not any(desc)):
            problems.append("%s: no description" % loc)
        if spec.get("options"):
            check_options(spec["options"], loc, problems)


def check_role(role_dir):
    problems = []
    role = os.path.basename(os.path.normpath(role_dir))
    defaults_path = None
    for name in ("main.yml", "main.yaml", "main"):
        p = os.path.join(role_dir, "defaults", name)
        if os.path.isfile(p):
            defaults_path = p
            break
    spec_path = None
    for name in ("argument_specs.yml", "argument_specs.yaml"):
        p = os.path.join(role_dir, "meta", name)
        if os.path.isfile(p):
            spec_path = p
            break
    defaults = (load(defaults_path) or {}) if defaults_path else {}
    if not isinstance(defaults, dict):
        return ["%s: defaults/main.yml is not a mapping" % role]
    if spec_path is None:
        if defaults:
            problems.append("%s: has defaults but no meta/argument_specs.yml" % role)
        return problems
    specs = (load(spec_path) or {}).get("argument_specs") or {}
    if "main" not in specs:
        problems.append("%s: meta/argument_specs.yml has no 'main' entry point" % role)

    for var in sorted(defaults):
        if var.startswith("__"):
            problems.append("%s: defaults/main.yml defines internal variable %s" % (role, var))

    for entry, spec in sorted(specs.items()):
        where = "%s[%s]" % (role, entry)
        options = (spec or {}).get("options") or {}
        if not (spec or {}).get("short_description"):
            problems.append("%s: no short_description" % where)
        check_options(options, where, problems)
        for name, opt in sorted(options.items()):
            if not isinstance(opt, dict):
                continue
            required = bool(opt.get("required"))
            if name not in defaults and not required:
                problems.append("%s.%s: documented but not in defaults/main.yml (and not required)" % (where, name))
            if name in defaults and required:
                problems.append("%s.%s: required but also defaulted in defaults/main.yml" % (where, name))
            if name in defaults and "default" in opt and opt["default"] != defaults[name]:
                problems.append("%s.%s: default %r differs from defaults/main.yml %r"
                                % (where, name, opt["default"], defaults[name]))
        if entry == "main":
            for var in sorted(defaults):
                if var not in options:
                    problems.append("%s.%s: in defaults/main.yml but not documented" % (where, var))
    return problems


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    roots = argv[1:] or [os.path.join(os.path.dirname(here), "roles")]
    problems, checked = [], 0
    for root in roots:
        if not os.path.isdir(root):
            sys.stderr.write("not a directory: %s\n" % root)
            return 2
        # a single role directory, or a directory of roles
        candidates = [root] if os.path.isdir(os.path.join(root, "tasks")) else \
            [os.path.join(root, d) for d in sorted(os.listdir(root)) if os.path.isdir(os.path.join(root, d))]
        for role_dir in candidates:
            checked += 1
            try:
                problems.extend(check_role(role_dir))
            except SpecFileError as e:
                problems.append(str(e))
    for p in problems:
        print("DRIFT: %s" % p)
    print("checked %d role(s): %s" % (checked, "OK" if not problems else "%d problem(s)" % len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
