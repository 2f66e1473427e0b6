// Reads a job through Flink's own RestClusterClient and prints what Flink's types made of the answers.
// Run as a single-file program: java -cp <Flink client classpath> RestClientProbe.java HOST PORT WHAT JOBID
// WHAT: status | details | result | overview | config | taskmanagers. One "key value" line per fact.
import org.apache.flink.api.common.JobID;
import org.apache.flink.client.deployment.StandaloneClusterId;
import org.apache.flink.client.program.rest.RestClusterClient;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.runtime.messages.webmonitor.ClusterOverview;
import org.apache.flink.runtime.rest.RestClient;
import org.apache.flink.util.concurrent.Executors;
import org.apache.flink.runtime.rest.messages.ClusterOverviewHeaders;
import org.apache.flink.runtime.rest.messages.DashboardConfiguration;
import org.apache.flink.runtime.rest.messages.DashboardConfigurationHeaders;
import org.apache.flink.runtime.rest.messages.job.JobDetailsInfo;
import org.apache.flink.runtime.rest.messages.taskmanager.TaskManagerInfo;
import org.apache.flink.runtime.rest.messages.taskmanager.TaskManagersHeaders;
import org.apache.flink.runtime.rest.messages.taskmanager.TaskManagersInfo;

public class RestClientProbe {
    public static void main(String[] args) throws Exception {
        Configuration conf = new Configuration();
        conf.set(RestOptions.ADDRESS, args[0]);
        conf.set(RestOptions.PORT, Integer.parseInt(args[1]));
        JobID job = args.length > 3 ? JobID.fromHexString(args[3]) : null;
        try (RestClusterClient<StandaloneClusterId> client = new RestClusterClient<>(conf, StandaloneClusterId.getInstance());
                RestClient rest = new RestClient(conf, Executors.directExecutor())) {
            switch (args[2]) {
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
                    System.out.println("running-since " + d.getTimestamps().get(org.apache.flink.api.common.JobStatus.RUNNING));
                    break;
                case "result":
                    var r = client.requestJobResult(job).get();
                    System.out.println("application-status " + r.getApplicationStatus());
                    System.out.println("net-runtime " + r.getNetRuntime());
                    r.getSerializedThrowable().ifPresent(t -> System.out.println("failure " + t.toString().replace('\n', ' ')));
                    break;
                case "overview":
                    ClusterOverview o = rest.sendRequest(args[0], Integer.parseInt(args[1]), ClusterOverviewHeaders.getInstance()).get();
                    System.out.println("taskmanagers " + o.getNumTaskManagersConnected());
                    System.out.println("slots-total " + o.getNumSlotsTotal());
                    System.out.println("jobs-running " + o.getNumJobsRunningOrPending());
                    break;
                case "config":
                    DashboardConfiguration c = rest.sendRequest(args[0], Integer.parseInt(args[1]), DashboardConfigurationHeaders.getInstance()).get();
                    System.out.println("flink-version " + c.getFlinkVersion());
                    System.out.println("web-cancel " + c.getFeatures().isWebCancelEnabled());
                    break;
                case "taskmanagers":
                    TaskManagersInfo t = rest.sendRequest(args[0], Integer.parseInt(args[1]), TaskManagersHeaders.getInstance()).get();
                    for (TaskManagerInfo tm : t.getTaskManagerInfos()) {
                        System.out.println("taskmanager " + tm.getResourceId() + " slots " + tm.getNumberSlots() + " free " + tm.getNumberAvailableSlots());
                        System.out.println("last-heartbeat " + tm.getLastHeartbeat());
                        System.out.println("task-heap " + tm.getMemoryConfiguration().getTaskHeap());
                        System.out.println("cpu-cores " + tm.getHardwareDescription().getNumberOfCPUCores());
                    }
                    break;
                default:
                    throw new IllegalArgumentException("unknown probe " + args[2]);
            }
        }
    }
}
