/* bench/arm64-insns.sh's plugin: counts the guest instructions qemu-user
 * executes (QEMU plugin API v1, as QEMU 7.2's qemu-plugin.h declares it;
 * Debian's qemu-user ships the API but no plugin). Each translated block
 * adds its instruction count each time it runs, atomically (exact with
 * several guest threads), and the total is printed at exit. */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
typedef void (*tb_trans_cb)(qemu_plugin_id_t, struct qemu_plugin_tb *);
typedef void (*vcpu_udata_cb)(unsigned int, void *);
typedef void (*udata_cb)(qemu_plugin_id_t, void *);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, tb_trans_cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *, vcpu_udata_cb, enum qemu_plugin_cb_flags, void *);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, udata_cb, void *);
void qemu_plugin_outs(const char *);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;
static uint64_t insns;

static void exec(unsigned int vcpu, void *n) {
	__atomic_fetch_add(&insns, (uint64_t)(uintptr_t)n, __ATOMIC_RELAXED);
}

static void trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
	qemu_plugin_register_vcpu_tb_exec_cb(tb, exec, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)qemu_plugin_tb_n_insns(tb));
}

static void done(qemu_plugin_id_t id, void *p) {
	char b[64];
	snprintf(b, sizeof b, "insns: %" PRIu64 "\n", __atomic_load_n(&insns, __ATOMIC_RELAXED));
	qemu_plugin_outs(b);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const void *info, int argc, char **argv) {
	qemu_plugin_register_vcpu_tb_trans_cb(id, trans);
	qemu_plugin_register_atexit_cb(id, done, NULL);
	return 0;
}
