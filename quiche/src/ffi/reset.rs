//! Stateless reset in the C API (RFC 9000 §10.3): quiche's token setter and, beyond quiche,
//! the static key and the reset a server sends for a connection it does not know. The rules
//! of the parent module apply.
#![allow(unsafe_code)]

use libc::{c_int, size_t, ssize_t};

use super::{err_ssize, guard, invalid, invalid_ssize, len_ssize, slice_in, slice_out};
use crate::cid::{RESET_KEY_LEN, RESET_TOKEN_LEN};
use crate::config::Config;

/// Sets the stateless reset token a server sends for its handshake connection ID: the 16
/// bytes at `v` (quiche's function; see [`Config::set_stateless_reset_token`]). NULL goes back
/// to the token derived from the static key.
///
/// # Safety
/// `config` is NULL or from `quiche_config_new`; `v` is NULL or points to 16 bytes.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_stateless_reset_token(
    config: *mut Config,
    v: *const u8,
) {
    guard((), || {
        // SAFETY: NULL is checked (by `as_mut` and `slice_in`); otherwise valid by contract.
        let (config, token) = unsafe { (config.as_mut(), slice_in(v, RESET_TOKEN_LEN)) };
        let Some(config) = config else {
            return;
        };
        let token = token.and_then(|t| <[u8; RESET_TOKEN_LEN]>::try_from(t).ok());
        config.set_stateless_reset_token(token.map(u128::from_be_bytes));
    })
}

/// Sets the static key stateless reset tokens are derived from (`key_len` must be 32); see
/// [`Config::set_stateless_reset_key`]. Returns 0, or `QUICHE_ERR_INVALID_STATE` for a NULL
/// argument or another length.
///
/// # Safety
/// `config` is NULL or from `quiche_config_new`; `key` is NULL or `key_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_set_stateless_reset_key(
    config: *mut Config,
    key: *const u8,
    key_len: size_t,
) -> c_int {
    guard(invalid(), || {
        // SAFETY: NULL is checked; otherwise valid by the caller's contract.
        let (config, key) = unsafe { (config.as_mut(), slice_in(key, key_len)) };
        let key = key.and_then(|k| <&[u8; RESET_KEY_LEN]>::try_from(k).ok());
        let (Some(config), Some(key)) = (config, key) else {
            return invalid();
        };
        config.set_stateless_reset_key(key);
        0
    })
}

/// Writes into `out` the stateless reset answering a short-header datagram of `received_len`
/// bytes addressed to `dcid`, a connection ID no connection knows; see
/// [`Config::stateless_reset`]. Returns its length, `QUICHE_ERR_DONE` when the datagram must
/// not be answered, `QUICHE_ERR_BUFFER_TOO_SHORT`, or `QUICHE_ERR_INVALID_STATE` for NULL
/// arguments.
///
/// # Safety
/// `config` is NULL or from `quiche_config_new`; `dcid` is NULL or `dcid_len` bytes; `out` is
/// NULL or `out_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn quiche_config_stateless_reset(
    config: *const Config,
    dcid: *const u8,
    dcid_len: size_t,
    received_len: size_t,
    out: *mut u8,
    out_len: size_t,
) -> ssize_t {
    guard(invalid_ssize(), || {
        // SAFETY: NULL is checked; otherwise valid by the caller's contract.
        let (config, dcid, out) = unsafe {
            (
                config.as_ref(),
                slice_in(dcid, dcid_len),
                slice_out(out, out_len),
            )
        };
        let (Some(config), Some(dcid), Some(out)) = (config, dcid, out) else {
            return invalid_ssize();
        };
        match config.stateless_reset(dcid, received_len, out) {
            Ok(n) => len_ssize(n),
            Err(e) => err_ssize(e),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn key_token_and_reset_through_the_c_api() {
        let mut config = Config::new(crate::PROTOCOL_VERSION).unwrap();
        let c: *mut Config = &mut config;
        let key = [7u8; RESET_KEY_LEN];
        // SAFETY: `c` is a live config and every buffer is as long as passed (so below too).
        unsafe {
            assert_eq!(
                quiche_config_set_stateless_reset_key(c, key.as_ptr(), 32),
                0
            );
            assert_eq!(
                quiche_config_set_stateless_reset_key(c, key.as_ptr(), 16),
                invalid()
            );
            assert_eq!(
                quiche_config_set_stateless_reset_key(c, std::ptr::null(), 32),
                invalid()
            );
            let token = [0x11u8; RESET_TOKEN_LEN];
            quiche_config_set_stateless_reset_token(c, token.as_ptr());
            quiche_config_set_stateless_reset_token(std::ptr::null_mut(), token.as_ptr());
        }
        assert_eq!(
            config.local_transport_params.stateless_reset_token,
            Some(u128::from_be_bytes([0x11; 16]))
        );
        // SAFETY: as above.
        unsafe { quiche_config_set_stateless_reset_token(c, std::ptr::null()) };
        assert_eq!(config.local_transport_params.stateless_reset_token, None);

        let dcid = [0xab; 16];
        let mut out = [0u8; 100];
        let c: *const Config = &config;
        // SAFETY: as above.
        let n = unsafe {
            quiche_config_stateless_reset(c, dcid.as_ptr(), 16, 1200, out.as_mut_ptr(), 100)
        };
        assert!((42..=64).contains(&n), "{n}");
        let n = n as usize;
        assert_eq!(out[0] & 0xc0, 0x40);
        let mut same_key = Config::new(crate::PROTOCOL_VERSION).unwrap();
        same_key.set_stateless_reset_key(&key);
        assert_eq!(out[n - 16..n], same_key.stateless_reset_token(&dcid));
        // SAFETY: as above.
        unsafe {
            let small =
                quiche_config_stateless_reset(c, dcid.as_ptr(), 16, 36, out.as_mut_ptr(), 100);
            assert_eq!(small, err_ssize(Error::Done));
            let null =
                quiche_config_stateless_reset(c, std::ptr::null(), 16, 1200, out.as_mut_ptr(), 100);
            assert_eq!(null, invalid_ssize());
            let short =
                quiche_config_stateless_reset(c, dcid.as_ptr(), 16, 1200, out.as_mut_ptr(), 30);
            assert_eq!(short, err_ssize(Error::BufferTooShort));
        }
    }
}
