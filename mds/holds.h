/* holds.h - who may still use a file's strip files: the MDS's memory of
 * the open handles it let in (MDS_OPEN, MDS_CREATE and their renewals), so
 * that a file unlinked while open somewhere keeps its strip files until no
 * handle may use them (README "Removing files").
 *
 * A hold is (file, client) until a wall-clock second: the expiry of the
 * capability issued with it (AUTH_CAP_TTL_S), renewed with it at half life
 * by handles that stay in use, or dropped early by MDS_RELEASE at the
 * client's last close. A file is held while any hold of it, or a floor,
 * lies within grace_s (AUTH_CAP_SKEW_S: how long past its expiry the I/O
 * servers still take a capability) of now. Floors cover what is not known:
 *   - the start floor: holds given before this MDS started end no later
 *     than start + AUTH_CAP_TTL_S after a crash, or than the latest end a
 *     clean stop recorded (none in a new namespace). It matters when a
 *     file's last link goes (its queue entry records it with the file's
 *     own holds) and for releases; a file queued before the start has its
 *     holds of then in its entry, so the start floor is not asked again;
 *   - the overflow floor: a hold that found the table full (max_entries
 *     live holds) is not kept alone but raises a floor that holds every
 *     file that long (safe; space is freed later).
 * The table lives in memory. Its journal (mds_holds_set_journal; the MDS's
 * is its store's hold records, holds_journal.h) is told of every hold it
 * keeps before it keeps it, so that a restart after a crash of the MDS
 * process knows the holds one by one instead of raising the start floor.
 * What an unlinked file's holds add up to is also kept with its purge
 * queue entry (namespace.h). Every call takes the table's own mutex and
 * calls out to nothing but the journal, under that mutex (so the journal
 * sees a hold's changes in the table's order). Times are passed in
 * (wall-clock seconds), so tests drive it.
 * Return convention: bools and void, or 0 / -errno where the journal may
 * fail; allocation failure at mds_holds_new is -ENOMEM. */
#ifndef DEPFS_MDS_HOLDS_H
#define DEPFS_MDS_HOLDS_H
#include <stdbool.h>
#include <stdint.h>

#define MDS_HOLDS_MAX (1u << 18) /* holds kept one by one (~40 bytes each) */

typedef struct mds_holds mds_holds;

/* Whether a hold ending at until_s is live at now_s, grace_s past its end. */
bool mds_hold_live(uint64_t until_s, uint64_t grace_s, uint64_t now_s);

/* start_floor_s: no file may be purged before it (0: none). */
int mds_holds_new(unsigned max_entries, uint64_t grace_s, uint64_t start_floor_s, mds_holds **out);
void mds_holds_free(mds_holds *h);

/* Where the table writes what it keeps, so a restart can know it:
 *   put: (ino, client) is held until until_s (writer: for writing), called
 *        before the table keeps a new hold, a longer one or a writer's
 *        mark; its error (-errno) fails that call and the table is left
 *        as it was, so the journal holds at least what the table does;
 *   put_floor: the later of the table's floors (start, overflow) is
 *        until_s now, the overflow floor having risen (likewise);
 *   drop: (ino, client) was released, or expired and left the table;
 *        best effort (a record left behind only holds its file until it
 *        expires, and goes at the next start).
 * NULL: no journal (the default). */
typedef struct mds_holds_journal {
    int (*put)(void *arg, uint64_t ino, uint64_t client, uint64_t until_s, bool writer);
    int (*put_floor)(void *arg, uint64_t until_s);
    void (*drop)(void *arg, uint64_t ino, uint64_t client);
    void *arg;
} mds_holds_journal;
void mds_holds_set_journal(mds_holds *h, const mds_holds_journal *j);

/* Client's hold of ino lasts at least until until_s: 0. With gen, the
 * hold gets a new generation, later than any this table gave before, also
 * before a restart (they start at the wall clock in nanoseconds), and
 * *gen is it; without (the journal's reload), a new hold has generation 0
 * and a kept one keeps its own. With only_if_held
 * (an unlinked file), a file that neither a hold since the start, the
 * overflow floor nor recorded_until_s (what its queue entry recorded)
 * keeps is purgeable, its strip files may be going: it gets no new hold,
 * -ENOENT. The journal's error when it could not write the hold. */
int mds_holds_note(mds_holds *h, uint64_t ino, uint64_t client, uint64_t until_s, bool only_if_held,
                   uint64_t recorded_until_s, uint64_t now_s, uint64_t *gen);
/* Client's live hold of ino (noted just before) is for writing: it stays
 * a writer's until released or expired: 0. No hold: nothing, 0. The
 * journal's error when it could not write the mark. */
int mds_holds_mark_writer(mds_holds *h, uint64_t ino, uint64_t client, uint64_t now_s);
/* Whether a client other than `client` may hold ino open for writing at
 * now_s: a live writer's hold, or a live floor (holds not known one by
 * one: any of them may be a writer's). MDS_MIGRATE_SWAP refuses then. */
bool mds_holds_other_writer(mds_holds *h, uint64_t ino, uint64_t client, uint64_t now_s);
/* Whether client itself has a live hold of ino (floors do not count: they
 * say someone may hold it, not who). */
bool mds_holds_client_holds(mds_holds *h, uint64_t ino, uint64_t client, uint64_t now_s);
/* Client holds no handle of ino any more (its last close): its hold goes
 * if its generation is at most gen, the newest the client was given (a
 * newer one is an open that raced that close and still holds the file);
 * MDS_HOLD_GEN_ANY: in any case (clients from before generations). */
#define MDS_HOLD_GEN_ANY UINT64_MAX
void mds_holds_release(mds_holds *h, uint64_t ino, uint64_t client, uint64_t gen);
/* Whether any hold of ino or a floor is live at now_s (within grace). */
bool mds_holds_held(mds_holds *h, uint64_t ino, uint64_t now_s);
/* The same without the start floor: what keeps a queued file whose entry
 * recorded the holds of before (listing for the purge). */
bool mds_holds_held_since_start(mds_holds *h, uint64_t ino, uint64_t now_s);
/* The latest end of a live hold of ino or of a live floor; 0: none. */
uint64_t mds_holds_until(mds_holds *h, uint64_t ino, uint64_t now_s);
/* The latest end of any live hold or floor (a clean stop records it). */
uint64_t mds_holds_until_max(mds_holds *h, uint64_t now_s);
/* When the later of the live floors, the start's and a full table's, stops
 * keeping files: its end plus the grace (0: none). No file unlinked now is
 * purged before it. */
uint64_t mds_holds_floor(mds_holds *h, uint64_t now_s);
/* Holds kept one by one now (for logs and tests). */
unsigned mds_holds_count(mds_holds *h);

#endif
