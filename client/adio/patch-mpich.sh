#!/usr/bin/env bash
# patch-mpich.sh - adds the DePFS ROMIO driver (client/adio) to an unpacked
# MPICH 4.0.2 source tree, then regenerates ROMIO's build system.
#
#   client/adio/patch-mpich.sh MPICH_SRC_DIR
#
# Edits (each idempotent, each checked so a changed MPICH fails loudly):
#   src/mpi/romio/adio/ad_depfs/        the driver sources (copied; re-run to refresh)
#   src/mpi/romio/configure.ac          'depfs' known file system, --with-depfs,
#                                       ROMIO_DEPFS, links -ldepfs
#   src/mpi/romio/adio/include/adio.h   ADIO_DEPFS id
#   adio/include/adioi_fs_proto.h       the operations table and prefix hooks
#   adio/common/ad_fstype.c             prefix table entry, depfs@N@K[@SU]: parsing,
#                                       ROMIO_FSTYPE_FORCE=depfs...: skips local stat
#   adio/Makefile.mk                    includes ad_depfs/Makefile.mk
# then runs ROMIO's own autogen.sh (not MPICH's top-level one).
set -euo pipefail
ADIO_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${1:?usage: patch-mpich.sh MPICH_SRC_DIR}
ROMIO="$SRC/src/mpi/romio"
[ -f "$ROMIO/configure.ac" ] || { echo "patch-mpich: $ROMIO/configure.ac not found" >&2; exit 1; }
ADIO_DEPFS_ID=172   # ADIO_QUOBYTEFS is 171; 180 is ADIO_FCNTL_SET_ATOMICITY

copy_sources() {
  mkdir -p "$ROMIO/adio/ad_depfs"
  cp "$ADIO_SRC"/*.c "$ADIO_SRC"/*.h "$ADIO_SRC"/Makefile.mk "$ROMIO/adio/ad_depfs/"
}

# python does the multi-line edits: each names its anchor and fails if gone
edit_tree() {
  python3 - "$ROMIO" "$ADIO_DEPFS_ID" <<'PY'
import sys, re
romio, dep_id = sys.argv[1], sys.argv[2]
MARK = "DEPFS-PATCH"

def edit(rel, fn):
    path = f"{romio}/{rel}"
    text = open(path).read()
    if MARK in text:
        return
    new = fn(text)
    assert new != text, f"patch-mpich: no change made to {rel}"
    open(path, "w").write(new)

def replace_once(text, old, new, what):
    if text.count(old) != 1:
        sys.exit(f"patch-mpich: anchor for {what} found {text.count(old)} times")
    return text.replace(old, new)

def configure_ac(t):
    t = replace_once(t, "[daos nfs ufs pvfs2 testfs xfs panfs lustre gpfs ime quobytefs])",
                     "[daos nfs ufs pvfs2 testfs xfs panfs lustre gpfs ime quobytefs depfs])",
                     "known file systems")
    block = r'''
# DEPFS-PATCH: the DePFS driver links libdepfs (--with-depfs=PREFIX holds
# include/depfs.h and lib/libdepfs.so)
AC_ARG_WITH([depfs],
    [AS_HELP_STRING([--with-depfs=PREFIX], [DePFS client library location])],,
    [with_depfs=])
if test -n "$file_system_depfs" ; then
    if test -n "$with_depfs" -a "x$with_depfs" != xyes ; then
        CPPFLAGS="$CPPFLAGS -I$with_depfs/include"
        PAC_APPEND_FLAG([-L$with_depfs/lib -Wl,-rpath,$with_depfs/lib],[LIBS])
    fi
    AC_CHECK_HEADER([depfs.h],,
        [AC_MSG_ERROR([DePFS requested but depfs.h not found (use --with-depfs=PREFIX)])])
    AC_CHECK_LIB([depfs], [depfs_mount],,
        [AC_MSG_ERROR([DePFS requested but libdepfs not found (use --with-depfs=PREFIX)])])
    AC_DEFINE(ROMIO_DEPFS,1,[Define for ROMIO with DePFS])
fi
'''
    anchor = "#\n# Verify presence of pvfs2.h\n"
    return replace_once(t, anchor, block + anchor, "pvfs2 check comment")

def adio_h(t):
    old = "#define ADIO_QUOBYTEFS           171    /* Quobyte FS */\n"
    assert f" {dep_id} " not in t.replace("\t", " "), f"ADIO id {dep_id} already used"
    return replace_once(t, old, old + f"#define ADIO_DEPFS               {dep_id}    /* DePFS (DEPFS-PATCH) */\n",
                        "ADIO_QUOBYTEFS id")

def fs_proto(t):
    block = '''#ifdef ROMIO_DEPFS
/* DEPFS-PATCH: prototypes in adio/ad_depfs/ad_depfs.h */
extern struct ADIOI_Fns_struct ADIO_DEPFS_operations;
int ADIOI_DEPFS_Is_label(const char *name);
int ADIOI_DEPFS_Prefix(const char *name);
int ADIOI_DEPFS_Forced(void);
#endif

'''
    return replace_once(t, "#endif /* ADIOI_FS_PROTO_H_INCLUDED */",
                        block + "#endif /* ADIOI_FS_PROTO_H_INCLUDED */", "fs_proto end")

def fstype(t):
    t = replace_once(t, "    {0, 0, 0}   /* guard entry */\n",
                     "#ifdef ROMIO_DEPFS\n    {&ADIO_DEPFS_operations, ADIO_DEPFS, \"depfs:\"},   /* DEPFS-PATCH */\n#endif\n"
                     "    {0, 0, 0}   /* guard entry */\n", "fstypes guard entry")
    # depfs, depfs@N@K and depfs@N@K@SU all start with "depfs": parse them here
    old = "    *error_code = MPI_SUCCESS;\n    *fstype = -1;\n\n    /* search table for prefix */\n"
    new = old.split("\n    /* search")[0] + '''
#ifdef ROMIO_DEPFS
    /* DEPFS-PATCH: depfs@N@K[@SU]: carries a layout the table cannot match;
     * the driver records it for its open (open.c strips the prefix) */
    if (ADIOI_DEPFS_Is_label(filename)) {
        *error_code = ADIOI_DEPFS_Prefix(filename);
        if (*error_code == MPI_SUCCESS) {
            *fstype = ADIO_DEPFS;
            *ops = &ADIO_DEPFS_operations;
        } else {
            *fstype = 0;
        }
        return;
    }
#endif

    /* search table for prefix */
'''
    t = replace_once(t, old, new, "prefix function start")
    # a forced depfs type must not stat the (DePFS-only) path locally first
    t = replace_once(t, "    tmp = strchr(filename, ':');\n    if (!tmp) {\n",
                     "    tmp = strchr(filename, ':');\n    if (!tmp && !ADIOI_DEPFS_FORCED()) {\n",
                     "no-prefix branch")
    t = replace_once(t, "    } else {\n        /* prefix specified; just match via prefix",
                     "    } else if (tmp) {\n        /* prefix specified; just match via prefix",
                     "prefix branch")
    t = replace_once(t, "struct ADIO_FSTypes {\n",
                     "/* DEPFS-PATCH */\n#ifdef ROMIO_DEPFS\n#define ADIOI_DEPFS_FORCED() ADIOI_DEPFS_Forced()\n"
                     "#else\n#define ADIOI_DEPFS_FORCED() 0\n#endif\n\nstruct ADIO_FSTypes {\n",
                     "ADIO_FSTypes struct")
    return t

def adio_mk(t):
    return replace_once(t, "include $(top_srcdir)/adio/common/Makefile.mk\n",
                        "include $(top_srcdir)/adio/ad_depfs/Makefile.mk\n## DEPFS-PATCH\n"
                        "include $(top_srcdir)/adio/common/Makefile.mk\n", "adio Makefile.mk")

edit("configure.ac", configure_ac)
edit("adio/include/adio.h", adio_h)
edit("adio/include/adioi_fs_proto.h", fs_proto)
edit("adio/common/ad_fstype.c", fstype)
edit("adio/Makefile.mk", adio_mk)
PY
}

copy_sources
edit_tree
if [ "${PATCH_MPICH_NO_AUTOGEN:-0}" != 1 ]; then
  echo "patch-mpich: running ROMIO autogen.sh"
  (cd "$ROMIO" && ./autogen.sh >autogen.log 2>&1) || { tail -n 30 "$ROMIO/autogen.log"; exit 1; }
fi
echo "patch-mpich: DePFS driver added to $SRC"
