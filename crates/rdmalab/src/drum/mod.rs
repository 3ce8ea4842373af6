//! DRUM: RDMA resource scheduling as network utility maximisation (seed 000).
