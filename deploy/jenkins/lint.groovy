// Parse check of the Jenkinsfiles and the shared library (tests/unit/deploy/test_deploy_lint.py):
// each file is compiled as Jenkins would compile it (a Groovy script), nothing is run. The
// Jenkins-only annotation @Library gets a stub so that it resolves; steps such as sh or
// stage are method calls, checked at run time by Jenkins, not here.
//   java -cp '<groovy jars>/*' groovy.ui.GroovyMain deploy/jenkins/lint.groovy <file>...
def loader = new GroovyClassLoader(this.class.classLoader)
loader.parseClass('''
    import java.lang.annotation.*
    @Retention(RetentionPolicy.SOURCE)
    @interface Library { String[] value() }
''')
int failed = 0
args.each { path ->
    try {
        new GroovyShell(loader).parse(new File(path))
        println "ok ${path}"
    } catch (org.codehaus.groovy.control.CompilationFailedException e) {
        failed++
        System.err.println("${path}: ${e.message}")
    }
}
System.exit(failed ? 1 : 0)
