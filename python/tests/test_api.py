"""The public surface: every public name is documented and in the type stubs."""

import ast
import pathlib

import ninefold
import ninefold.linalg

PKG = pathlib.Path(ninefold.__file__).parent


def stub_names(path):
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
    return names


def test_every_public_name_has_a_stub_and_a_docstring():
    stubs = stub_names(PKG / "__init__.pyi")
    missing = [n for n in ninefold.__all__ if n not in stubs]
    assert not missing, f"not in ninefold/__init__.pyi: {missing}"
    for name in ninefold.__all__:
        obj = getattr(ninefold, name)
        if callable(obj):
            assert obj.__doc__ and obj.__doc__.strip(), f"{name} has no docstring"


def test_every_method_of_the_classes_is_documented():
    for cls in (ninefold.World, ninefold.GlobalArray, ninefold.Counter, ninefold.Request, ninefold.Status):
        for attr, member in vars(cls).items():
            if attr.startswith("_") or not callable(member):
                continue
            assert member.__doc__, f"{cls.__name__}.{attr} has no docstring"


def test_the_package_marks_itself_typed():
    assert (PKG / "py.typed").is_file()
