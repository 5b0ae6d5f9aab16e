"""The one walk over a module: the semantic model and the collaborators that fill it.

Each collaborator has one job and is handed what it needs: the model (model.py) holds bindings,
scopes and where the walk stands; the evaluator (expressions.py) gives an expression's value;
calls.py resolves a call to what it calls, with qualified.py for imported names, placement.py
for moves, instances.py for the file's plain classes and bodies.py for the file's own functions,
whose statements statements.py walks (compound.py for branches and loops, binding.py for
assignments). Evaluating a call can walk a body, and a body holds calls: the two references
that close that circle are set here, once everything exists.
"""

from __future__ import annotations

import libcst as cst

from gpudoc.lint.analysis.bodies import Bodies
from gpudoc.lint.analysis.calls import CallEvaluator
from gpudoc.lint.analysis.classes import ClassFacts
from gpudoc.lint.analysis.events import EventBus
from gpudoc.lint.analysis.expressions import Evaluator
from gpudoc.lint.analysis.instances import Instances
from gpudoc.lint.analysis.model import SemanticModel
from gpudoc.lint.analysis.names import ImportTable
from gpudoc.lint.analysis.placement import Placement
from gpudoc.lint.analysis.project_names import ProjectNames
from gpudoc.lint.analysis.qualified import QualifiedCalls
from gpudoc.lint.analysis.statements import StatementWalker


def analyze(
    module: cst.Module, bus: EventBus | None = None, path: str | None = None
) -> SemanticModel:
    """Walk ``module``; ``path`` is its file, whose project modules its imports may name.
    Returns the model as the walk left it (its ``flags`` say what it found about the file)."""
    model = SemanticModel(ImportTable(), bus, path, module)
    evaluator = Evaluator(model)
    placement = Placement(model)
    classes = ClassFacts(model)
    projects = ProjectNames(model, classes)
    model.resolve_project_name = projects.resolve_project_name
    model.home_member = projects.home_member
    model.home_class = projects.home_class
    bodies = Bodies(model, classes)
    instances = Instances(model, evaluator, bodies)
    library = QualifiedCalls(model, evaluator, placement)
    evaluator.calls = CallEvaluator(model, evaluator, placement, library, instances, bodies)
    statements = StatementWalker(model, evaluator, placement, bodies, projects)
    bodies.statements = statements
    statements.walk_block(module.body)
    model.terminated = False
    bodies.walk_pending()
    return model


__all__ = ["analyze"]
