"""Model files and checkpoints are data, never code (issue 8).

1. A static audit of the package source (``ast``, not regexes): no pickle-family module is
   imported anywhere in ``jaxsim_contact``; no ``eval`` / ``exec`` / ``compile`` / ``__import__``
   call anywhere; in ``jaxsim_contact.io`` (which reads untrusted files) no process spawning and no
   ``allow_pickle=True``.
2. Model files whose names, attributes, comments and custom text hold Python payloads load as
   plain data (the strings come back verbatim, nothing runs); XML external entities are not read.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import jaxsim_contact as jc

PACKAGE = Path(jc.__file__).resolve().parent
PICKLE_FAMILY = {"pickle", "cPickle", "_pickle", "dill", "cloudpickle", "marshal", "shelve", "joblib",
                 "jsonpickle", "copyreg"}
CODE_RUNNERS = {"eval", "exec", "compile", "__import__", "execfile"}
PROCESS_SPAWNERS = {"subprocess", "os.system", "os.popen", "os.exec", "os.spawn", "pty", "importlib"}


def python_files(root: Path) -> list[Path]:
    files = sorted(root.rglob("*.py"))
    assert files
    return files


def imported_modules(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    return ""


def test_no_pickle_and_no_code_execution_in_the_package_source():
    offences = []
    for path in python_files(PACKAGE):
        tree = ast.parse(path.read_text(), filename=str(path))
        for module in imported_modules(tree):
            if module.split(".")[0] in PICKLE_FAMILY:
                offences.append(f"{path}: imports {module}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CODE_RUNNERS:
                offences.append(f"{path}:{node.lineno}: calls {node.func.id}()")
    assert not offences, offences


def test_the_io_package_spawns_nothing_and_never_allows_pickle():
    offences = []
    for path in python_files(PACKAGE / "io"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for module in imported_modules(tree):
            if any(module == bad or module.startswith(bad + ".") for bad in PROCESS_SPAWNERS):
                offences.append(f"{path}: imports {module}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = dotted(node.func)
                if any(name == bad or name.startswith(bad) for bad in PROCESS_SPAWNERS if "." in bad):
                    offences.append(f"{path}:{node.lineno}: calls {name}")
                for keyword in node.keywords:
                    if keyword.arg == "allow_pickle" and not (
                            isinstance(keyword.value, ast.Constant) and keyword.value.value is False):
                        offences.append(f"{path}:{node.lineno}: allow_pickle={ast.unparse(keyword.value)}")
    assert not offences, offences


def test_the_audit_catches_what_it_looks_for(tmp_path):
    """The audit itself can fail: a planted file with each offence is reported."""
    planted = ("import pickle\nimport subprocess\nimport numpy as np\n"
               "x = eval('1')\nnp.load('f', allow_pickle=True)\nimport os\nos.system('true')\n")
    tree = ast.parse(planted)
    assert "pickle" in imported_modules(tree) and "subprocess" in imported_modules(tree)
    calls = {dotted(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    assert {"eval", "np.load", "os.system"} <= calls


PAYLOAD = "__import__('os').system('touch {sentinel}')"

MJCF = """<?xml version="1.0"?>
<!-- exec(open('{sentinel}', 'w').write('ran')) -->
<mujoco model="{payload}">
  <custom><text name="exec(compile('import os', 'x', 'exec'))" data="eval('{payload}')"/></custom>
  <worldbody>
    <geom name="eval('1+1')" type="plane" size="1 1 0.1"/>
    <body name="{payload}" pos="0 0 0.5">
      <joint name="${{{{7*7}}}}" type="hinge" axis="0 1 0"/>
      <geom name="{{{{ self.__class__ }}}}" type="sphere" size="0.1" mass="1"/>
    </body>
  </worldbody>
</mujoco>
"""

URDF = """<?xml version="1.0"?>
<robot name="{payload}">
  <link name="{payload}">
    <inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><sphere radius="0.1"/></geometry></collision>
  </link>
  <link name="lambda: exec('import os')">
    <inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="eval('2')" type="revolute">
    <parent link="{payload}"/><child link="lambda: exec('import os')"/>
    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>
</robot>
"""


def test_python_payloads_in_model_files_are_plain_data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sentinel = tmp_path / "SENTINEL"
    payload = PAYLOAD.format(sentinel=sentinel)
    (tmp_path / "evil.xml").write_text(MJCF.format(sentinel=sentinel, payload=payload))
    model = jc.load(tmp_path / "evil.xml")
    assert model.body_names[1] == payload
    assert model.joint_names == ("${{7*7}}",)
    assert model.geom_names == ("eval('1+1')", "{{ self.__class__ }}")

    (tmp_path / "evil.urdf").write_text(URDF.format(payload=payload))
    robot = jc.load(tmp_path / "evil.urdf")
    assert "eval('2')" in robot.joint_names
    assert "lambda: exec('import os')" in robot.body_names
    assert not sentinel.exists()


def test_external_entities_are_not_read(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    xml = (f'<?xml version="1.0"?>\n<!DOCTYPE mujoco [<!ENTITY leak SYSTEM "file://{secret}">]>\n'
           '<mujoco><worldbody><body name="&leak;"><freejoint/><geom type="sphere" size="0.1"/>'
           "</body></worldbody></mujoco>\n")
    (tmp_path / "xxe.xml").write_text(xml)
    try:
        model = jc.load(tmp_path / "xxe.xml")
    except jc.io.ModelError:
        return  # refused as malformed: fine
    assert not any("TOP-SECRET" in name for name in model.body_names)


@pytest.mark.parametrize("content", [
    b"\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x94\x8c\x06system\x94\x93\x94.",  # pickle
    b"import os; os.system('touch SENTINEL')\n",
])
def test_model_files_that_are_not_xml_fail_with_a_parse_error(tmp_path, monkeypatch, content):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.xml").write_bytes(content)
    with pytest.raises(jc.io.ModelParseError):
        jc.load(tmp_path / "model.xml")
    assert not (tmp_path / "SENTINEL").exists()
