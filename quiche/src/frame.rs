//! Every frame of RFC 9000 §19 plus DATAGRAM (RFC 9221): decode, encode, wire length.
