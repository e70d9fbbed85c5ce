//! Symbolic errno names for I/O errors (`EACCES`, `ENOENT`, `EXDEV`, ...), shared by every capability that
//! reports a filesystem failure to the model (config lock and store, apply_patch), so the same failure always
//! carries the same stable code and never a path or a localized message.

/// The symbolic name of an I/O error's errno (`EACCES`, `ENOSPC`, ...). An errno without a known name is
/// `ERRNO<n>`; an error that carries no errno is named from its kind (`ENOENT`, `EACCES`, `EEXIST`), else `EIO`.
pub fn code(e: &std::io::Error) -> String {
    let Some(n) = e.raw_os_error() else {
        return match e.kind() {
            std::io::ErrorKind::NotFound => "ENOENT",
            std::io::ErrorKind::PermissionDenied => "EACCES",
            std::io::ErrorKind::AlreadyExists => "EEXIST",
            _ => "EIO",
        }
        .to_string();
    };
    match name(n) {
        Some(s) => s.to_string(),
        None => format!("ERRNO{n}"),
    }
}

/// The symbolic name of a raw errno number, when it is one a filesystem operation can report.
fn name(n: i32) -> Option<&'static str> {
    Some(match n {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EIO => "EIO",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::EXDEV => "EXDEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::ETXTBSY => "ETXTBSY",
        libc::EFBIG => "EFBIG",
        libc::ENOSPC => "ENOSPC",
        libc::EROFS => "EROFS",
        libc::EMLINK => "EMLINK",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ENOTEMPTY => "ENOTEMPTY",
        libc::ELOOP => "ELOOP",
        libc::EDQUOT => "EDQUOT",
        libc::ENOSYS => "ENOSYS",
        libc::ESTALE => "ESTALE",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::code;
    use std::io::{Error, ErrorKind};

    #[test]
    fn names_errnos_and_kinds() {
        for (n, s) in [
            (libc::EACCES, "EACCES"),
            (libc::EPERM, "EPERM"),
            (libc::ENOENT, "ENOENT"),
            (libc::ENOTDIR, "ENOTDIR"),
            (libc::EISDIR, "EISDIR"),
            (libc::EROFS, "EROFS"),
            (libc::ENOSPC, "ENOSPC"),
            (libc::EEXIST, "EEXIST"),
            (libc::ENOTEMPTY, "ENOTEMPTY"),
            (libc::EIO, "EIO"),
            (libc::ELOOP, "ELOOP"),
            (libc::ENAMETOOLONG, "ENAMETOOLONG"),
            (libc::EMFILE, "EMFILE"),
            (libc::EBUSY, "EBUSY"),
            (libc::EXDEV, "EXDEV"),
            (libc::EDQUOT, "EDQUOT"),
        ] {
            assert_eq!(code(&Error::from_raw_os_error(n)), s);
        }
        assert_eq!(code(&Error::from_raw_os_error(9999)), "ERRNO9999");
        assert_eq!(code(&Error::from(ErrorKind::NotFound)), "ENOENT");
        assert_eq!(code(&Error::from(ErrorKind::PermissionDenied)), "EACCES");
        assert_eq!(code(&Error::from(ErrorKind::InvalidData)), "EIO");
    }
}
