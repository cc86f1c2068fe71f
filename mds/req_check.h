/* req_check.h - the MDS's boundary: before any op sees a decoded
 * MdsRequest, every field it carries is within the bounds of wire_check.h
 * (names, symlink targets, xattr names and values, modes, owners, device
 * numbers, setattr bits, create flags, group counts) and its encoded string
 * fields hold no NUL byte. What needs the inode (a setattr mode's type
 * against the file's, a size against its layout, xattrs per inode) is the
 * namespace's check. */
#ifndef DEPFS_MDS_REQ_CHECK_H
#define DEPFS_MDS_REQ_CHECK_H
#include <stddef.h>
#include <stdint.h>

#include "depfs.pb-c.h"

/* 0, or a negative errno (EINVAL, ENAMETOOLONG, ERANGE, E2BIG, ENOENT)
 * with the reason in why (why_len bytes). hdr[0..hdr_len) is the encoding
 * q was decoded from. */
int mds_req_check(uint16_t type, const Depfs__MdsRequest *q, const uint8_t *hdr, size_t hdr_len,
                  char *why, size_t why_len);

#endif
