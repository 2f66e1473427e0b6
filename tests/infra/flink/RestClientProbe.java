// Reads a job through Flink's own RestClusterClient and prints what Flink's types made of the answers.
// One source for every Flink release of tests/infra/flink/versions (1.20 and 2.x), compiled against each:
// what only one of them has is reached by reflection.
// Run: java -cp <classes>:<Flink client classpath> RestClientProbe HOST PORT WHAT[,WHAT...] [JOBID]
// WHAT: status | details | result | overview | config | taskmanagers | applications (Flink 2 only), several in
// one JVM (each JVM start costs seconds). One "key value" line per fact.
import java.util.Collection;
import java.util.Optional;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.client.deployment.StandaloneClusterId;
import org.apache.flink.client.program.rest.RestClusterClient;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.runtime.clusterframework.ApplicationStatus;
import org.apache.flink.runtime.messages.webmonitor.ClusterOverview;
import org.apache.flink.runtime.rest.RestClient;
import org.apache.flink.runtime.rest.messages.ClusterOverviewHeaders;
import org.apache.flink.runtime.rest.messages.DashboardConfiguration;
import org.apache.flink.runtime.rest.messages.DashboardConfigurationHeaders;
import org.apache.flink.runtime.rest.messages.EmptyRequestBody;
import org.apache.flink.runtime.rest.messages.MessageHeaders;
import org.apache.flink.runtime.rest.messages.MessageParameters;
import org.apache.flink.runtime.rest.messages.MessagePathParameter;
import org.apache.flink.runtime.rest.messages.job.JobDetailsInfo;
import org.apache.flink.runtime.rest.messages.taskmanager.TaskManagerInfo;
import org.apache.flink.runtime.rest.messages.taskmanager.TaskManagersHeaders;
import org.apache.flink.runtime.rest.messages.taskmanager.TaskManagersInfo;
import org.apache.flink.util.concurrent.Executors;

public class RestClientProbe {
    private final RestClusterClient<StandaloneClusterId> client;
    private final RestClient rest;
    private final String host;
    private final int port;
    private final String jobId;

    private RestClientProbe(RestClusterClient<StandaloneClusterId> client, RestClient rest, String host, int port, String jobId) {
        this.client = client;
        this.rest = rest;
        this.host = host;
        this.port = port;
        this.jobId = jobId;
    }

    public static void main(String[] args) throws Exception {
        Configuration conf = new Configuration();
        conf.set(RestOptions.ADDRESS, args[0]);
        conf.set(RestOptions.PORT, Integer.parseInt(args[1]));
        try (RestClusterClient<StandaloneClusterId> client = new RestClusterClient<>(conf, StandaloneClusterId.getInstance());
                RestClient rest = new RestClient(conf, Executors.directExecutor())) {
            RestClientProbe probe = new RestClientProbe(client, rest, args[0], Integer.parseInt(args[1]), args.length > 3 ? args[3] : null);
            for (String what : args[2].split(",")) {
                probe.read(what);
            }
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"}) // the headers of Flink 2's application paths, reached by reflection
    private void read(String what) throws Exception {
        JobID job = jobId == null ? null : JobID.fromHexString(jobId);
        switch (what) {
            case "status":
                System.out.println("status " + client.getJobStatus(job).get());
                break;
            case "details":
                JobDetailsInfo d = client.getJobDetails(job).get();
                System.out.println("jid " + d.getJobId());
                System.out.println("name " + d.getName());
                System.out.println("state " + d.getJobStatus());
                System.out.println("vertices " + d.getJobVertexInfos().size());
                for (JobDetailsInfo.JobVertexDetailsInfo v : d.getJobVertexInfos()) {
                    System.out.println("vertex " + v.getJobVertexID() + " " + v.getExecutionState() + " " + v.getParallelism());
                    System.out.println("vertex-tasks " + v.getTasksPerState());
                }
                System.out.println("status-counts " + d.getJobVerticesPerState());
                System.out.println("running-since " + d.getTimestamps().get(JobStatus.RUNNING));
                break;
            case "result":
                var r = client.requestJobResult(job).get();
                // Flink 1.x's JobResult has getApplicationStatus(); 2.x's reads the same wire field into getJobStatus()
                // (and a name, application id, start and end time, which a 1.x reader refuses: "unknown"/-1 here).
                Object application = call(r, "getApplicationStatus");
                if (application == null) {
                    JobStatus status = ((Optional<?>) call(r, "getJobStatus")).map(JobStatus.class::cast).orElse(null);
                    System.out.println("job-status " + status);
                    application = ApplicationStatus.fromJobStatus(status);
                }
                System.out.println("application-status " + application);
                System.out.println("net-runtime " + r.getNetRuntime());
                r.getSerializedThrowable().ifPresent(t -> System.out.println("failure " + t.toString().replace('\n', ' ')));
                break;
            case "overview":
                ClusterOverview o = rest.sendRequest(host, port, ClusterOverviewHeaders.getInstance()).get();
                System.out.println("taskmanagers " + o.getNumTaskManagersConnected());
                System.out.println("slots-total " + o.getNumSlotsTotal());
                System.out.println("jobs-running " + o.getNumJobsRunningOrPending());
                break;
            case "config":
                DashboardConfiguration c = rest.sendRequest(host, port, DashboardConfigurationHeaders.getInstance()).get();
                System.out.println("flink-version " + c.getFlinkVersion());
                System.out.println("web-cancel " + c.getFeatures().isWebCancelEnabled());
                break;
            case "taskmanagers":
                TaskManagersInfo t = rest.sendRequest(host, port, TaskManagersHeaders.getInstance()).get();
                for (TaskManagerInfo tm : t.getTaskManagerInfos()) {
                    System.out.println("taskmanager " + tm.getResourceId() + " slots " + tm.getNumberSlots() + " free " + tm.getNumberAvailableSlots());
                    System.out.println("last-heartbeat " + tm.getLastHeartbeat());
                    System.out.println("task-heap " + tm.getMemoryConfiguration().getTaskHeap());
                    System.out.println("cpu-cores " + tm.getHardwareDescription().getNumberOfCPUCores());
                    Object assigned = call(tm, "getAssignedTasks"); // Flink 2.x
                    if (assigned != null) {
                        System.out.println("assigned-tasks " + assigned);
                    }
                }
                break;
            case "applications":
                // Flink 2.x's application overview and the job's application (its id is the job's), read by Flink's types.
                Object overview = rest.sendRequest(host, port, headers("org.apache.flink.runtime.rest.messages.ApplicationsOverviewHeaders")).get();
                for (Object a : (Collection<?>) call(overview, "getApplications")) {
                    System.out.println("application " + call(a, "getApplicationId") + " " + call(a, "getStatus") + " " + call(a, "getApplicationName"));
                }
                MessageHeaders details = headers("org.apache.flink.runtime.rest.messages.application.ApplicationDetailsHeaders");
                MessageParameters parameters = details.getUnresolvedMessageParameters();
                for (MessagePathParameter<?> parameter : parameters.getPathParameters()) {
                    parameter.resolveFromString(jobId);
                }
                Object info = rest.sendRequest(host, port, details, parameters, EmptyRequestBody.getInstance()).get();
                System.out.println("application-id " + call(info, "getApplicationId"));
                System.out.println("application-name " + call(info, "getApplicationName"));
                System.out.println("application-state " + call(info, "getApplicationStatus"));
                System.out.println("application-timestamps " + call(info, "getTimestamps"));
                for (Object j : (Collection<?>) call(info, "getJobs")) {
                    System.out.println("application-job " + call(j, "getJobId") + " " + call(j, "getStatus"));
                }
                break;
            default:
                throw new IllegalArgumentException("unknown probe " + what);
        }
    }

    /** The {@code getInstance()} of a headers class that not every Flink release has. */
    @SuppressWarnings("rawtypes")
    private static MessageHeaders headers(String className) throws Exception {
        return (MessageHeaders) Class.forName(className).getMethod("getInstance").invoke(null);
    }

    /** {@code target.method()}, or null when this Flink release has no such method. */
    private static Object call(Object target, String method) throws Exception {
        try {
            return target.getClass().getMethod(method).invoke(target);
        } catch (NoSuchMethodException absent) {
            return null;
        }
    }
}
