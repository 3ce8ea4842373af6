//! The messages of a Chakra execution trace, declared from the field numbers of MLCommons'
//! published schema (`schema/protobuf/et_def.proto`, package `ChakraProtoMsg`) with prost's
//! derive macros: no generated code and no `protoc`. Only what the reader uses is declared;
//! prost skips the other fields (a storage node's `storage`, 11) as protobuf does.

use prost::{Enumeration, Message, Oneof};

/// The first message of a trace (`GlobalMetadata`).
#[derive(Clone, PartialEq, Message)]
pub struct GlobalMetadata {
    /// The schema's version as the writer put it.
    #[prost(string, tag = "1")]
    pub version: String,
    /// Free attributes of the whole trace.
    #[prost(message, repeated, tag = "2")]
    pub attr: Vec<Attribute>,
}

/// Every message after the first (`Node`).
#[derive(Clone, PartialEq, Message)]
pub struct Node {
    /// Unique within the rank's file.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// The operator's name.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Its kind, a [`NodeType`] (an unknown number stays readable, and is refused by name).
    #[prost(int32, tag = "3")]
    pub r#type: i32,
    /// Nodes that must finish first, by order only.
    #[prost(uint64, repeated, tag = "4")]
    pub ctrl_deps: Vec<u64>,
    /// Nodes whose output this one reads.
    #[prost(uint64, repeated, tag = "5")]
    pub data_deps: Vec<u64>,
    /// When it started in the traced run.
    #[prost(uint64, tag = "6")]
    pub start_time_micros: u64,
    /// How long it ran in the traced run.
    #[prost(uint64, tag = "7")]
    pub duration_micros: u64,
    /// Its attributes (`comm_type`, `comm_size`, ...).
    #[prost(message, repeated, tag = "10")]
    pub attr: Vec<Attribute>,
}

/// `NodeType`: what a node does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
#[repr(i32)]
pub enum NodeType {
    /// Never valid.
    InvalidNode = 0,
    /// Metadata only.
    MetadataNode = 1,
    /// A load from memory.
    MemLoadNode = 2,
    /// A store to memory.
    MemStoreNode = 3,
    /// Compute.
    CompNode = 4,
    /// A point-to-point send.
    CommSendNode = 5,
    /// A point-to-point receive.
    CommRecvNode = 6,
    /// A collective.
    CommCollNode = 7,
    /// A storage operation.
    StorageNode = 8,
    /// A batch boundary.
    BatchNode = 9,
    /// A checkpoint.
    CheckpointNode = 10,
}

/// `CollectiveCommType`: the value of a collective's `comm_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
#[repr(i32)]
pub enum CollectiveCommType {
    /// Sum to every rank.
    AllReduce = 0,
    /// Sum to one rank.
    Reduce = 1,
    /// Every piece to every rank.
    AllGather = 2,
    /// Every piece to one rank.
    Gather = 3,
    /// One rank's pieces, one to each.
    Scatter = 4,
    /// One rank's buffer to every rank.
    Broadcast = 5,
    /// A distinct piece between every pair.
    AllToAll = 6,
    /// Sum of one piece to each rank.
    ReduceScatter = 7,
    /// As `ReduceScatter`, equal blocks.
    ReduceScatterBlock = 8,
    /// Synchronisation only.
    Barrier = 9,
}

/// `AttributeProto`: a named value of one of protobuf's scalar types, or a list of them.
#[derive(Clone, PartialEq, Message)]
pub struct Attribute {
    /// The attribute's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its value (`None`: unset).
    #[prost(
        oneof = "Value",
        tags = "3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32"
    )]
    pub value: Option<Value>,
}

/// The values of `AttributeProto`'s `value` oneof, field number by field number. Lists are
/// kept as their encoded bytes' count only: no attribute the reader uses is a list, and an
/// attribute it uses given as a list is refused by name.
#[derive(Clone, PartialEq, Oneof)]
pub enum Value {
    /// `double_val`.
    #[prost(double, tag = "3")]
    Double(f64),
    /// `double_list`.
    #[prost(message, tag = "4")]
    DoubleList(Opaque),
    /// `float_val`.
    #[prost(float, tag = "5")]
    Float(f32),
    /// `float_list`.
    #[prost(message, tag = "6")]
    FloatList(Opaque),
    /// `int32_val`.
    #[prost(int32, tag = "7")]
    Int32(i32),
    /// `int32_list`.
    #[prost(message, tag = "8")]
    Int32List(Opaque),
    /// `int64_val`.
    #[prost(int64, tag = "9")]
    Int64(i64),
    /// `int64_list`.
    #[prost(message, tag = "10")]
    Int64List(Opaque),
    /// `uint32_val`.
    #[prost(uint32, tag = "11")]
    Uint32(u32),
    /// `uint32_list`.
    #[prost(message, tag = "12")]
    Uint32List(Opaque),
    /// `uint64_val`.
    #[prost(uint64, tag = "13")]
    Uint64(u64),
    /// `uint64_list`.
    #[prost(message, tag = "14")]
    Uint64List(Opaque),
    /// `sint32_val`.
    #[prost(sint32, tag = "15")]
    Sint32(i32),
    /// `sint32_list`.
    #[prost(message, tag = "16")]
    Sint32List(Opaque),
    /// `sint64_val`.
    #[prost(sint64, tag = "17")]
    Sint64(i64),
    /// `sint64_list`.
    #[prost(message, tag = "18")]
    Sint64List(Opaque),
    /// `fixed32_val`.
    #[prost(fixed32, tag = "19")]
    Fixed32(u32),
    /// `fixed32_list`.
    #[prost(message, tag = "20")]
    Fixed32List(Opaque),
    /// `fixed64_val`.
    #[prost(fixed64, tag = "21")]
    Fixed64(u64),
    /// `fixed64_list`.
    #[prost(message, tag = "22")]
    Fixed64List(Opaque),
    /// `sfixed32_val`.
    #[prost(sfixed32, tag = "23")]
    Sfixed32(i32),
    /// `sfixed32_list`.
    #[prost(message, tag = "24")]
    Sfixed32List(Opaque),
    /// `sfixed64_val`.
    #[prost(sfixed64, tag = "25")]
    Sfixed64(i64),
    /// `sfixed64_list`.
    #[prost(message, tag = "26")]
    Sfixed64List(Opaque),
    /// `bool_val`.
    #[prost(bool, tag = "27")]
    Bool(bool),
    /// `bool_list`.
    #[prost(message, tag = "28")]
    BoolList(Opaque),
    /// `string_val`.
    #[prost(string, tag = "29")]
    String(String),
    /// `string_list`.
    #[prost(message, tag = "30")]
    StringList(Opaque),
    /// `bytes_val`.
    #[prost(bytes = "vec", tag = "31")]
    Bytes(Vec<u8>),
    /// `bytes_list`.
    #[prost(message, tag = "32")]
    BytesList(Opaque),
}

/// A list message whose values the reader does not need: prost decodes it (checking its
/// framing) and keeps nothing.
#[derive(Clone, PartialEq, Message)]
pub struct Opaque {}

impl Value {
    /// The value as an integer, if it is one of the integer types (or a bool).
    pub fn as_i128(&self) -> Option<i128> {
        Some(match *self {
            Value::Int32(v) | Value::Sint32(v) | Value::Sfixed32(v) => v.into(),
            Value::Int64(v) | Value::Sint64(v) | Value::Sfixed64(v) => v.into(),
            Value::Uint32(v) | Value::Fixed32(v) => v.into(),
            Value::Uint64(v) | Value::Fixed64(v) => v.into(),
            Value::Bool(v) => v.into(),
            _ => return None,
        })
    }

    /// The schema's name of the value's type, for errors.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Double(_) => "double_val",
            Value::Float(_) => "float_val",
            Value::Int32(_) => "int32_val",
            Value::Int64(_) => "int64_val",
            Value::Uint32(_) => "uint32_val",
            Value::Uint64(_) => "uint64_val",
            Value::Sint32(_) => "sint32_val",
            Value::Sint64(_) => "sint64_val",
            Value::Fixed32(_) => "fixed32_val",
            Value::Fixed64(_) => "fixed64_val",
            Value::Sfixed32(_) => "sfixed32_val",
            Value::Sfixed64(_) => "sfixed64_val",
            Value::Bool(_) => "bool_val",
            Value::String(_) => "string_val",
            Value::Bytes(_) => "bytes_val",
            _ => "a list",
        }
    }
}

impl NodeType {
    /// Its name in the schema.
    pub fn schema_name(self) -> &'static str {
        match self {
            NodeType::InvalidNode => "INVALID_NODE",
            NodeType::MetadataNode => "METADATA_NODE",
            NodeType::MemLoadNode => "MEM_LOAD_NODE",
            NodeType::MemStoreNode => "MEM_STORE_NODE",
            NodeType::CompNode => "COMP_NODE",
            NodeType::CommSendNode => "COMM_SEND_NODE",
            NodeType::CommRecvNode => "COMM_RECV_NODE",
            NodeType::CommCollNode => "COMM_COLL_NODE",
            NodeType::StorageNode => "STORAGE_NODE",
            NodeType::BatchNode => "BATCH_NODE",
            NodeType::CheckpointNode => "CHECKPOINT_NODE",
        }
    }
}

impl CollectiveCommType {
    /// Its name in the schema.
    pub fn schema_name(self) -> &'static str {
        match self {
            CollectiveCommType::AllReduce => "ALL_REDUCE",
            CollectiveCommType::Reduce => "REDUCE",
            CollectiveCommType::AllGather => "ALL_GATHER",
            CollectiveCommType::Gather => "GATHER",
            CollectiveCommType::Scatter => "SCATTER",
            CollectiveCommType::Broadcast => "BROADCAST",
            CollectiveCommType::AllToAll => "ALL_TO_ALL",
            CollectiveCommType::ReduceScatter => "REDUCE_SCATTER",
            CollectiveCommType::ReduceScatterBlock => "REDUCE_SCATTER_BLOCK",
            CollectiveCommType::Barrier => "BARRIER",
        }
    }
}
