//! The data tree: nodes in an ordered map, with ZooKeeper's `Stat` bookkeeping.
//!
//! What each transaction does to the metadata, as ZooKeeper 3.8 does it (measured against a
//! real server by the differential test):
//!
//! - **create**: the node starts with `czxid = mzxid = pzxid = zxid`, `version = cversion =
//!   aversion = 0`, `ephemeralOwner` = the session for ephemeral modes and 0 otherwise (also for
//!   containers). The parent's `cversion` goes up by one, its `pzxid` becomes `zxid`.
//! - **delete**: the parent's `cversion` goes up by one too, and its `pzxid` becomes `zxid`.
//! - **setData**: `version` goes up by one, `mzxid` becomes `zxid`.
//! - **sequence numbers**: a sequential child gets the parent's *creation counter*: the number
//!   of children created under this parent so far, sequential or not. Deletes and failed creates
//!   do not advance it (so it is *not* `cversion`, which deletes advance). A parent created again
//!   starts from 0.
//!
//! A fresh tree holds what a fresh server holds: `/` (with `cversion` -1, as measured) and the
//! system nodes `/zookeeper`, `/zookeeper/quota` and `/zookeeper/config`.
//!
//! Not modelled: ACLs (every node is open to all; `aversion` stays 0), quotas, TTL nodes, the
//! 1 MiB data limit, and times (`ctime` and `mtime` are 0: the model has no clock).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use std::hash::{Hash, Hasher};
use zkh_recipes::path::{name_of, parent_of};
use zkh_recipes::symmetry::{hash_set_of_hashes, RenamedCache, Renaming, Symmetric};
use zkh_recipes::{SessionId, Stat};

/// One node.
///
/// Its hash leaves out `children`: they are the names of the tree's paths one level below it,
/// so two trees with the same paths and the same nodes otherwise have the same children
/// everywhere, and a child's creation need not hash its parent's list again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// The data.
    pub data: Vec<u8>,
    /// The zxid of the creation.
    pub czxid: i64,
    /// The zxid of the last setData (or the creation).
    pub mzxid: i64,
    /// The zxid of the last child create or delete (or the creation).
    pub pzxid: i64,
    /// setData count.
    pub version: i32,
    /// Child create and delete count.
    pub cversion: i32,
    /// The owning session, for ephemeral nodes.
    pub ephemeral_owner: Option<SessionId>,
    /// True for container nodes.
    pub container: bool,
    /// Children created under this node so far: the next sequence number.
    pub creations: i32,
    /// Child names.
    pub children: BTreeSet<String>,
}

impl Node {
    /// A copy without the list of children (its counts kept), for a view of a few paths.
    pub fn without_children(&self) -> Node {
        Node {
            data: self.data.clone(),
            children: BTreeSet::new(),
            ..*self
        }
    }

    fn new(data: Vec<u8>, zxid: i64, ephemeral_owner: Option<SessionId>, container: bool) -> Node {
        Node {
            data,
            czxid: zxid,
            mzxid: zxid,
            pzxid: zxid,
            version: 0,
            cversion: 0,
            ephemeral_owner,
            container,
            creations: 0,
            children: BTreeSet::new(),
        }
    }

    /// The node's `Stat` (times are 0).
    pub fn stat(&self) -> Stat {
        Stat {
            czxid: self.czxid,
            mzxid: self.mzxid,
            pzxid: self.pzxid,
            ctime: 0,
            mtime: 0,
            version: self.version,
            cversion: self.cversion,
            aversion: 0,
            ephemeral_owner: self.ephemeral_owner.map_or(0, |s| s.0),
            data_length: i32::try_from(self.data.len())
                .expect("node data longer than i32::MAX bytes"),
            num_children: i32::try_from(self.children.len()).expect("more than i32::MAX children"),
        }
    }
}

/// The system paths a client may not delete.
pub const SYSTEM_PATHS: [&str; 3] = ["/zookeeper", "/zookeeper/quota", "/zookeeper/config"];

/// All nodes by path.
///
/// Paths and nodes are reference-counted: the model checker copies the tree on every step that
/// changes it, and a copy then shares every path and every node it does not change.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DataTree {
    nodes: BTreeMap<Arc<str>, Arc<Held>>,
}

/// A node in the tree, with the renamed hashes of it and its path (see
/// [`zkh_recipes::symmetry`]) once a symmetry-reducing search asks for them. A step changes one
/// or two nodes, so a tree's renamed hashes are then sums of cached numbers, and only the
/// changed nodes are hashed again.
#[derive(Debug)]
struct Held {
    node: Node,
    renamed: RenamedCache,
}

impl Held {
    fn new(node: Node) -> Arc<Held> {
        Arc::new(Held {
            node,
            renamed: RenamedCache::default(),
        })
    }

    /// The hash of `path` with this node under `renaming`: a node is held under one path
    /// only, so the cache is the pair's.
    fn hash_under(&self, path: &Arc<str>, renaming: &Renaming<'_>) -> u64 {
        let key = || crate::shared::hash_of(&("node", path, &self.node));
        self.renamed.hash_under(&(path, &self.node), renaming, key)
    }
}

impl Clone for Held {
    /// A copy is made to be changed: its renamed hashes are not copied.
    fn clone(&self) -> Self {
        Held {
            node: self.node.clone(),
            renamed: RenamedCache::default(),
        }
    }
}

impl PartialEq for Held {
    fn eq(&self, other: &Self) -> bool {
        self.node == other.node
    }
}

impl Eq for Held {}

impl Hash for Held {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.node.hash(state);
    }
}

impl Default for DataTree {
    fn default() -> Self {
        let mut root = Node::new(Vec::new(), 0, None, false);
        root.cversion = -1;
        let mut tree = DataTree {
            nodes: BTreeMap::from([(Arc::from("/"), Held::new(root))]),
        };
        for path in SYSTEM_PATHS {
            tree.insert_system_node(path);
        }
        tree
    }
}

impl DataTree {
    fn insert_system_node(&mut self, path: &str) {
        let parent = self
            .node_mut(parent_of(path))
            .expect("system node parents are created first");
        parent.children.insert(name_of(path).to_owned());
        let node = Node::new(Vec::new(), 0, None, false);
        self.nodes.insert(Arc::from(path), Held::new(node));
    }

    /// The node at `path`.
    pub fn get(&self, path: &str) -> Option<&Node> {
        self.nodes.get(path).map(|held| &held.node)
    }

    /// The node at `path`, to change (copied first if another tree shares it).
    fn node_mut(&mut self, path: &str) -> Option<&mut Node> {
        self.nodes
            .get_mut(path)
            .map(|held| &mut Arc::make_mut(held).node)
    }

    /// Every node, by path.
    pub fn nodes(&self) -> impl Iterator<Item = (&str, &Node)> {
        self.nodes.iter().map(|(path, held)| (&**path, &held.node))
    }

    /// Creates the node `path` (its parent must exist) and updates the parent.
    ///
    /// # Panics
    /// If the parent is missing or the node exists: the caller checks both first.
    pub fn create(
        &mut self,
        path: &str,
        data: Vec<u8>,
        zxid: i64,
        owner: Option<SessionId>,
        container: bool,
    ) {
        let parent = self
            .node_mut(parent_of(path))
            .expect("create: parent checked to exist");
        assert!(
            parent.children.insert(name_of(path).to_owned()),
            "create: {path} checked to be absent"
        );
        parent.cversion += 1;
        parent.pzxid = zxid;
        parent.creations += 1;
        let node = Node::new(data, zxid, owner, container);
        self.nodes.insert(Arc::from(path), Held::new(node));
    }

    /// Deletes the childless node `path` and updates the parent; returns the removed node.
    ///
    /// # Panics
    /// If the node is missing or has children: the caller checks both first.
    pub fn delete(&mut self, path: &str, zxid: i64) -> Node {
        let node = self
            .nodes
            .remove(path)
            .expect("delete: node checked to exist");
        let node = Arc::unwrap_or_clone(node).node;
        assert!(
            node.children.is_empty(),
            "delete: {path} checked to have no children"
        );
        let parent = self
            .node_mut(parent_of(path))
            .expect("every node but the root has a parent");
        parent.children.remove(name_of(path));
        parent.cversion += 1;
        parent.pzxid = zxid;
        node
    }

    /// Sets the data of `path`; returns the new `Stat`.
    ///
    /// # Panics
    /// If the node is missing: the caller checks first.
    pub fn set_data(&mut self, path: &str, data: Vec<u8>, zxid: i64) -> Stat {
        let node = self
            .node_mut(path)
            .expect("set_data: node checked to exist");
        node.data = data;
        node.version += 1;
        node.mzxid = zxid;
        node.stat()
    }

    /// Containers that have had children and have none now: the ones the server reaps.
    pub fn empty_containers(&self) -> Vec<String> {
        self.nodes()
            .filter(|(_, node)| node.container && node.cversion > 0 && node.children.is_empty())
            .map(|(path, _)| path.to_owned())
            .collect()
    }
}

/// A node's parts as its hashes read them: its data, its owner (both may hold identities),
/// and the rest, which holds none. Its children are left out (see [`Node`]).
type NodeParts<'a> = (&'a [u8], &'a Option<SessionId>, [i64; 3], [i32; 3], bool);

impl Node {
    fn hashed_parts(&self) -> NodeParts<'_> {
        let Node {
            data,
            czxid,
            mzxid,
            pzxid,
            version,
            cversion,
            ephemeral_owner,
            container,
            creations,
            children: _derived_from_the_paths,
        } = self;
        let zxids = [*czxid, *mzxid, *pzxid];
        let counts = [*version, *cversion, *creations];
        (data, ephemeral_owner, zxids, counts, *container)
    }
}

/// A node's identities: its data (an instance id, say) and its owner.
impl Symmetric for Node {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        let (data, owner, zxids, counts, container) = self.hashed_parts();
        data.hash_renamed(renaming, state);
        owner.hash_renamed(renaming, state);
        (zxids, counts, container).hash(state);
    }
}

impl Hash for Node {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.hashed_parts().hash(state);
    }
}

/// The nodes as a set (a renaming reorders paths), from each node's cached renamed hashes.
impl Symmetric for DataTree {
    fn hash_renamed<H: Hasher>(&self, renaming: &Renaming<'_>, state: &mut H) {
        if renaming.is_recording() {
            // Identities are in the paths: hashed under each renaming instead of as a skeleton
            // (cheap: a sum of each node's cached hashes).
            return renaming.unsupported();
        }
        let hashes = self
            .nodes
            .iter()
            .map(|(path, held)| held.hash_under(path, renaming));
        hash_set_of_hashes(hashes, state);
    }

    const CACHES_PARTS: bool = true;
}
