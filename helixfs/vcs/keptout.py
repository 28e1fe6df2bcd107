"""What a work tree keeps out of its commits, for the live nodes of a Worktree: the
ignore rules in force in each folder (ADR 0061), beside the editor temp names (ADR 0019).

A folder's rules are its own rule files' (vcs/ignore.py) over those of the folders
above it, so they change only when a rule file in it or above it changes, or when the
folder moves. `LiveScopes` memoises them per folder node and forgets them all at such
a change, which also spoils the purity (`Node.pure`: "a commit leaves nothing out below
here") of every loaded folder below: a save in between costs two dict lookups a folder.
"""

from __future__ import annotations

import bisect
import stat
from collections.abc import Callable, Iterator, Mapping

from helixfs.errors import NotADirectory, NotFound
from helixfs.ids import ObjectId
from helixfs.vcs.ignore import (
    EXCLUDE_PATH,
    GIT_DIR,
    NO_RULES,
    RULE_FILES,
    RULES_MAX,
    RepoRules,
    RuleFiles,
    Rules,
    Scope,
)
from helixfs.vcs.links import places_of
from helixfs.vcs.node import Node
from helixfs.vcs.objects import FLAT_MAX, Tree, TreeEntry, encode_entry
from helixfs.vcs.overlay import Part
from helixfs.vcs.treeops import Patches, Trees, holds_file, kept_out, patch_hint, subtree

LISTED_MAX = 1000
"""Ignored paths `helix status` gathers at most (the text shows fewer)."""


class LiveScopes:
    """The scope (rules in force) of each loaded folder of one work tree."""

    def __init__(
        self,
        files: RuleFiles | None,
        read: Callable[[ObjectId], bytes],
        children: Callable[[Node], dict[bytes, Node]],
    ) -> None:
        self._files = files
        self._read = read
        self._children = children  # loads a folder's children when they are not yet
        self._outer: dict[Node, Scope] = {}
        self._inner: dict[Node, Scope] = {}
        # Folders whose commit tree the last commit made (so the head's tree at their
        # place is it), with the names changed in each since (None: not known) and what
        # that commit left out of each (its overlay part, vcs/overlay.py), and those the
        # commit under way walks (theirs once it lands: `confirm`).
        self._since: dict[Node, set[bytes] | None] = {}
        self._parts: dict[Node, Part] = {}
        self._walking: list[tuple[Node, Part]] = []

    def outer(self, folder: Node) -> Scope:
        """The rules `folder` inherits from the folders above it."""
        found = self._outer.get(folder)
        if found is None:
            parent = folder.parent
            found = NO_RULES if parent is None else self.inner(parent).below(folder.name)
            self._outer[folder] = found
        return found

    def inner(self, folder: Node) -> Scope:
        """The rules in force for `folder`'s children: its own rule files' first."""
        found = self._inner.get(folder)
        if found is None:
            outer = self.outer(folder)
            if not outer.everything:
                found = outer.with_rules(self._rules_of(folder), self._repo_of(folder, outer))
            else:
                found = outer
            self._inner[folder] = found
        return found

    def _repo_of(self, folder: Node, outer: Scope) -> RepoRules | None:
        """The repository rules `folder` starts: it holds `.git`, or it is the root."""
        if self._files is None:
            return None
        node: Node | None = self._children(folder).get(GIT_DIR)
        if node is None and outer.base is not None:
            return None
        for name in EXCLUDE_PATH:
            node = self._children(node).get(name) if node is not None and node.is_dir() else None
        usable = node is not None and stat.S_ISREG(node.mode) and node.size <= RULES_MAX
        return self._files.repo(node.oid if usable and node is not None else None, self._read)

    def _rules_of(self, folder: Node) -> Rules | None:
        if self._files is None:
            return None
        children = self._children(folder)
        ids = []
        for name in RULE_FILES:
            child = children.get(name)
            usable = child is not None and stat.S_ISREG(child.mode) and child.size <= RULES_MAX
            ids.append(child.oid if usable and child is not None else None)
        return self._files.rules(tuple(ids), self._read)

    def ignores(self, folder: Node, name: bytes, child: Node) -> bool:
        """Whether the ignore rules leave `folder`'s child `name` out of commits."""
        return self.inner(folder).ignored(name, child.is_dir())

    def touched(self, node: Node, relisted: bytes | None, subject: Node | None) -> None:
        """A change the work tree records (Worktree._touch): when it is to a rule file,
        or moves a folder, the rules of folders below may differ from now on."""
        if relisted is not None:
            ruled = _ruled_folder(node, relisted)
            if ruled is not None:
                self.spoil(ruled)
            elif subject is not None and subject.is_dir():
                self.spoil(subject)
        elif node.name in _RULE_NAMES or node.group is not None:
            for parent, name in places_of(node):  # a hard link's other names too
                ruled = _ruled_folder(parent, name) if parent is not None else None
                if ruled is not None and not node.is_dir():
                    self.spoil(ruled)

    def encoded(self, node: Node) -> None:
        """`node` is encoded (Worktree._encode), which forgets the names changed in it
        since the last save (`node.stale`): the names changed since the commit keep them."""
        if node in self._since:
            known = self._since[node]
            stale = node.stale
            self._since[node] = None if known is None or stale is None else known | stale

    def changed(self, folder: Node | None, name: bytes) -> None:
        """`folder`'s child `name` changed: so did each folder on the way up, in its
        parent. Kept here, not only gathered at encodes, for a commit that leaves dirty
        folders unencoded (ADR 0061, 0086): their `stale` holds every name
        changed since their last encode, more than since the last commit."""
        since = self._since
        if not since:  # no commit has made a commit tree yet: nothing to note (a tar x)
            return
        node: Node | None = folder
        while node is not None:
            known = since.get(node)
            if known is not None:
                known.add(name)
            name, node = node.name, node.parent

    def changed_since(self, node: Node) -> set[bytes] | None:
        """The names changed in `node` since the last commit made its commit tree (the
        head's tree at its place); None when it did not, or that is not known."""
        return self._since.get(node)

    def last(self, node: Node) -> tuple[set[bytes] | None, Part | None]:
        """`changed_since(node)`, and what the last commit that made `node`'s commit tree
        left out of it (None: not known)."""
        return self._since.get(node), self._parts.get(node)

    def begin(self) -> None:
        self._walking = []

    def walked(self, node: Node, part: Part) -> None:
        self._walking.append((node, part))

    def confirm(self) -> None:
        """The commit landed (or equals the head): what it walked is the head's."""
        since, parts = self._since, self._parts
        for node, part in self._walking:
            known = since.get(node)
            if known is None:
                since[node] = set()
            else:  # the commit is done with it: emptied, not made again
                known.clear()
            parts[node] = part
        self._walking = []

    def forget_walks(self) -> None:
        """The head moved under the work tree (a lost compare-and-swap)."""
        self._since.clear()
        self._parts.clear()
        self._walking = []

    def spoil(self, folder: Node) -> None:
        """Rules at `folder` changed: forget every scope, the purity of `folder` and of
        every loaded folder below it (the next encode of each derives it again) and the
        commit trees walked there (the next commit walks them whole)."""
        self._outer.clear()
        self._inner.clear()
        stack = [folder]
        while stack:
            node = stack.pop()
            node.pure = False
            node.recheck = True
            self._since.pop(node, None)
            self._parts.pop(node, None)
            for page in node.pages or ():
                page.pure = False
            if node.children is not None:
                stack.extend(c for c in node.children.values() if c.is_dir())


_RULE_NAMES = frozenset((*RULE_FILES, EXCLUDE_PATH[-1]))


def _ruled_folder(parent: Node, name: bytes) -> Node | None:
    """The folder whose rules change when `parent`'s child `name` does: a rule file's
    folder, or for `.git`, `.git/info` or `.git/info/exclude` the repository's root."""
    if name in RULE_FILES or name == GIT_DIR:
        return parent
    chain = (parent.name, parent.parent.name if parent.parent is not None else None)
    if name == EXCLUDE_PATH[0] and parent.name == GIT_DIR:
        return parent.parent
    if name == EXCLUDE_PATH[1] and chain == (EXCLUDE_PATH[0], GIT_DIR):
        assert parent.parent is not None
        return parent.parent.parent
    return None


def patch_tree(
    trees: Trees,
    head: Tree,
    tracked: ObjectId,
    made: dict[bytes, TreeEntry | None],
    objects: dict[ObjectId, bytes],
    own: TreeEntry | None = None,
    known: Mapping[bytes, bytes] | None = None,
    patches: Patches | None = None,
) -> ObjectId:
    """The head's tree `tracked` (decoded: `head`) with the entries of the names in
    `made` replaced (None: left out), path-copied: a paged folder rewrites only the
    pages those names are in. `own`: a root's own attributes (ADR 0044); `known`: the
    encodings of some of `made`'s entries, made already (not encoded again). A name
    replaced in place leaves the names as they were (the head's tuple, not a copy).
    `patches` learns the new listing as a patch on the head's when only names replaced in
    place changed it (ADR 0095: path copying's own trims, as `Trees.apply` gives them)."""
    known = known or {}
    entries, raws, names = head.entries, head.raw, head.names
    differs = own != head.own
    first = last = -1  # the span of entries replaced in place (for a patch)
    for name in sorted(made) if len(made) > 1 else made:
        entry = made[name]
        at = bisect.bisect_left(names, name)
        present = at < len(names) and names[at] == name
        if entry is None:
            if present:
                entries = entries[:at] + entries[at + 1 :]
                raws = raws[:at] + raws[at + 1 :]
                names = names[:at] + names[at + 1 :]
                differs = True
        elif not present:
            entries = (*entries[:at], entry, *entries[at:])
            raws = (*raws[:at], known.get(name) or encode_entry(entry), *raws[at:])
            names = (*names[:at], name, *names[at:])
            differs = True
        elif entries[at] != entry:
            listed, encoded = list(entries), list(raws)
            listed[at], encoded[at] = entry, known.get(name) or encode_entry(entry)
            entries, raws = tuple(listed), tuple(encoded)
            differs = True
            first = at if first < 0 else min(first, at)
            last = max(last, at)
    if not differs:
        return tracked
    if own is None and len(raws) <= FLAT_MAX:  # most: a flat folder, not the root record
        listing = trees.encode_flat(entries, raws, names, objects)
        # the names are the head's (no insert, no delete): every entry outside the span
        # is the head's own encoding, so the trims are exact by construction
        if patches is not None and first >= 0 and names is head.names:
            patch_hint(patches, tracked, head, listing, raws, first, last, objects)
        return listing
    return trees.encode(entries, raws, objects, names, previous=head, changed=made, own=own)


def left_out(root: Node, scopes: LiveScopes, trees: Trees, path: bytes, head: ObjectId) -> bool:
    """Whether a changed `path` is one the commit leaves out: ignored there or inside
    an ignored folder, and not in the head commit (git: a tracked file stays tracked)."""
    node = root
    for part in path.split(b"/"):
        if node.children is None:
            return False  # not loaded: not ignored by anything that changed
        child = node.children.get(part)
        if child is None:
            return False  # gone: its deletion is a change whatever its name
        if scopes.ignores(node, part, child):
            try:
                return trees.entry(head, path) is None
            except (NotFound, NotADirectory):
                return True
        node = child
    return False


def ignored_paths(root: Node, scopes: LiveScopes, trees: Trees, head: ObjectId) -> list[bytes]:
    """The topmost paths of a live work tree that its next commit leaves out (a folder
    as `name/`), at most LISTED_MAX: what `helix status` reports as ignored."""
    found: list[bytes] = []
    for path in _live_walk(root, b"", head, NO_RULES, scopes, trees):
        found.append(path)
        if len(found) >= LISTED_MAX:
            break
    return found


def _live_walk(
    node: Node,
    prefix: bytes,
    tracked: ObjectId | None,
    outer: Scope,
    scopes: LiveScopes,
    trees: Trees,
) -> Iterator[bytes]:
    if node.pure and not node.dirty:
        return
    if node.children is None:
        assert node.oid is not None
        yield from stored_ignored(trees, node.oid, tracked, outer, prefix)
        return
    scope = scopes.inner(node)
    head = trees.get(tracked) if tracked is not None else None
    for name in sorted(node.children):
        child = node.children[name]
        path = prefix + name
        if child.is_dir():
            inner = scope.below(name)
            there = subtree(head, name)
            if inner.everything and there is None:
                yield path + b"/"
            else:
                yield from _live_walk(child, path + b"/", there, inner, scopes, trees)
        elif kept_out(scope, name) and not holds_file(head, name):
            yield path


def stored_ignored(
    trees: Trees, oid: ObjectId, tracked: ObjectId | None, outer: Scope, prefix: bytes = b""
) -> Iterator[bytes]:
    """`ignored_paths` of a stored work tree (a saved `work/BRANCH`): only folders that
    differ from the head commit's are read."""
    if oid == tracked:
        return
    tree = trees.get(oid)
    head = trees.get(tracked) if tracked is not None else None
    scope = trees.scope_in(tree, outer)
    for entry in tree.entries:
        path = prefix + entry.name
        if entry.is_dir():
            inner = scope.below(entry.name)
            there = subtree(head, entry.name)
            if inner.everything and there is None:
                yield path + b"/"
            else:
                yield from stored_ignored(trees, entry.oid, there, inner, path + b"/")
        elif kept_out(scope, entry.name) and not holds_file(head, entry.name):
            yield path
